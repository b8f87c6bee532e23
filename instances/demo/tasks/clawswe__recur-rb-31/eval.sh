#!/bin/bash
set -uxo pipefail
# one output stream: docker reads stdout and stderr through separate pipes and can
# splice a stderr chunk (cargo's progress, this script's trace) into a half-read line
exec 2>&1
cd /testbed
git config --global --add safe.directory /testbed
git status
git show --stat HEAD
git -c core.fileMode=false diff d06cd78a0cd6053e4b6360dd9e5b2603aeaa5dd5
git checkout d06cd78a0cd6053e4b6360dd9e5b2603aeaa5dd5 -- test/test_rule.rb test/test_schedule.rb
git apply -v - <<'EOF_114329324912'
diff --git a/test/test_rule.rb b/test/test_rule.rb
index 53e7b99..57616a5 100644
--- a/test/test_rule.rb
+++ b/test/test_rule.rb
@@ -42,4 +42,16 @@ describe Recur::Rule do
     _(Recur::Rule.new(:monthly, interval: 2, count: 6).to_s).must_equal "every 2 months for 6 times"
     _(Recur::Rule.new(:daily, until_date: d("2024-05-01")).to_s).must_equal "every day until 2024-05-01"
   end
+
+  it "comes back to the 31st after a shorter month." do
+    _(iso(Recur::Rule.new(:monthly).occurrences(d("2024-01-31")).first(5)))
+      .must_equal %w[2024-01-31 2024-02-29 2024-03-31 2024-04-30 2024-05-31]
+    _(iso(Recur::Rule.new(:monthly, interval: 2).occurrences(d("2024-08-31")).first(4)))
+      .must_equal %w[2024-08-31 2024-10-31 2024-12-31 2025-02-28]
+  end
+
+  it "comes back to February 29 in leap years." do
+    _(iso(Recur::Rule.new(:yearly).occurrences(d("2024-02-29")).first(5)))
+      .must_equal %w[2024-02-29 2025-02-28 2026-02-28 2027-02-28 2028-02-29]
+  end
 end
diff --git a/test/test_schedule.rb b/test/test_schedule.rb
index 9c5bab7..e1170dc 100644
--- a/test/test_schedule.rb
+++ b/test/test_schedule.rb
@@ -28,4 +28,15 @@ describe Recur::Schedule do
     _(schedule.include?(d("2024-01-07"))).must_equal true
     _(schedule.include?(d("2024-01-08"))).must_equal false
   end
+
+  it "bills on the last day of every month." do
+    schedule = Recur.schedule("monthly for 4 times", start: d("2023-12-31"))
+    _(iso(schedule.to_a)).must_equal %w[2023-12-31 2024-01-31 2024-02-29 2024-03-31]
+    _(Recur.schedule("monthly", start: d("2024-01-31")).include?(d("2024-05-31"))).must_equal true
+  end
+
+  it "ends on the until date after a short month." do
+    schedule = Recur.schedule("monthly until 2024-04-30", start: d("2024-01-30"))
+    _(iso(schedule.to_a)).must_equal %w[2024-01-30 2024-02-29 2024-03-30 2024-04-30]
+  end
 end
EOF_114329324912
: '>>>>> Start Test Output'
rake test TESTOPTS=-v
: '>>>>> End Test Output'
git checkout d06cd78a0cd6053e4b6360dd9e5b2603aeaa5dd5 -- test/test_rule.rb test/test_schedule.rb
