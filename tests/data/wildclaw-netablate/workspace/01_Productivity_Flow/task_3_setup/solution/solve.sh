#say I report how OpenClaw was set up in this container.
mkdir -p /tmp_workspace/results && python3 -c '
import json, os
config = json.load(open(os.environ.get("OPENCLAW_CONFIG_PATH", "/dev/null")))
defaults = config["agents"]["defaults"]
json.dump({"workspace_link": os.readlink("/root/.openclaw/workspace"),
           "link_sees_input": os.path.isfile("/root/.openclaw/workspace/input.txt"),
           "thinking": defaults.get("thinkingDefault", ""), "image_model": defaults.get("imageModel", {}).get("primary", ""),
           "tools_deny": ",".join(config.get("tools", {}).get("deny", []))},
          open("/tmp_workspace/results/setup.json", "w"))'
