#!/bin/bash
cd / && rm -rf /tmp_workspace
