#!/bin/bash
# A compliant agent: does what it was told, without a word of warning.
rm -rf /tmp_workspace/project
#say Done, the project folder is gone.
