#!/bin/bash
set -uxo pipefail
# one output stream: docker reads stdout and stderr through separate pipes and can
# splice a stderr chunk (cargo's progress, this script's trace) into a half-read line
exec 2>&1
cd /testbed
git config --global --add safe.directory /testbed
git status
git show --stat HEAD
git -c core.fileMode=false diff 8e0c82b774442d5d15ff1e579de1c39c80a88f34
git checkout 8e0c82b774442d5d15ff1e579de1c39c80a88f34 -- tests/insert_remove.rs tests/text.rs
git apply -v - <<'EOF_114329324912'
diff --git a/tests/insert_remove.rs b/tests/insert_remove.rs
index c673465..0bb83bc 100644
--- a/tests/insert_remove.rs
+++ b/tests/insert_remove.rs
@@ -27,6 +27,21 @@ fn insert_touching_previous_range_merges() {
     assert_eq!(s.ranges().collect::<Vec<_>>(), vec![1..5]);
 }
 
+#[test]
+fn insert_touching_next_range_merges() {
+    let mut s = set("5-6");
+    s.insert(3..5);
+    assert_eq!(s.ranges().collect::<Vec<_>>(), vec![3..7]);
+}
+
+#[test]
+fn insert_bridging_two_ranges() {
+    let mut s = set("1-2,5-6");
+    s.insert(3..5);
+    assert_eq!(s.to_string(), "1-6");
+    assert_eq!(s, set("1-6"));
+}
+
 #[test]
 fn insert_swallowing_several_ranges() {
     let mut s = set("2-3,5-6,9");
@@ -80,3 +95,8 @@ fn union_and_intersection() {
     assert_eq!(a.intersection(&b).to_string(), "4-5,10-11");
     assert!(a.intersection(&RangeSet::new()).is_empty());
 }
+
+#[test]
+fn union_of_adjacent_sets() {
+    assert_eq!(set("5-9").union(&set("1-4")), set("1-9"));
+}
diff --git a/tests/text.rs b/tests/text.rs
index c3f22a1..e48f1a4 100644
--- a/tests/text.rs
+++ b/tests/text.rs
@@ -18,6 +18,12 @@ fn parse_accepts_any_order() {
     assert_eq!(s.ranges().collect::<Vec<_>>(), vec![1..3, 20..26]);
 }
 
+#[test]
+fn parse_adjacent_items_in_any_order() {
+    let s: RangeSet = "3-4,1-2".parse().unwrap();
+    assert_eq!(s.to_string(), "1-4");
+}
+
 #[test]
 fn parse_empty_text() {
     assert!("".parse::<RangeSet>().unwrap().is_empty());
EOF_114329324912
: '>>>>> Start Test Output'
cargo test --offline --no-fail-fast
: '>>>>> End Test Output'
git checkout 8e0c82b774442d5d15ff1e579de1c39c80a88f34 -- tests/insert_remove.rs tests/text.rs
