#!/bin/bash
set -uxo pipefail
# one output stream: docker reads stdout and stderr through separate pipes and can
# splice a stderr chunk (cargo's progress, this script's trace) into a half-read line
exec 2>&1
cd /testbed
git config --global --add safe.directory /testbed
git status
git show --stat HEAD
git -c core.fileMode=false diff 3497db4578657dff7098bd11ed23864412bef48e
git checkout 3497db4578657dff7098bd11ed23864412bef48e -- constraint_test.go
git apply -v - <<'EOF_114329324912'
diff --git a/constraint_test.go b/constraint_test.go
index 6826b12..dd09aad 100644
--- a/constraint_test.go
+++ b/constraint_test.go
@@ -70,6 +70,16 @@ func TestCaret(t *testing.T) {
 	})
 }
 
+func TestCaretZeroMajor(t *testing.T) {
+	checkRanges(t, []rangeCase{
+		{"^0.2.3", []string{"0.2.3", "0.2.9"}, []string{"0.3.0", "0.9.1", "1.0.0", "0.2.2"}},
+		{"^0.0.3", []string{"0.0.3"}, []string{"0.0.4", "0.1.0"}},
+		{"^0.0", []string{"0.0.0", "0.0.9"}, []string{"0.1.0"}},
+		{"^0.1.x", []string{"0.1.0", "0.1.5"}, []string{"0.2.0"}},
+		{"^0", []string{"0.0.1", "0.9.0"}, []string{"1.0.0"}},
+	})
+}
+
 func TestOr(t *testing.T) {
 	checkRanges(t, []rangeCase{
 		{"<1.0.0 || >=2.0.0 <2.1.0", []string{"0.5.0", "2.0.5"}, []string{"1.0.0", "2.1.0"}},
EOF_114329324912
: '>>>>> Start Test Output'
go test -v -count=1 ./...
: '>>>>> End Test Output'
git checkout 3497db4578657dff7098bd11ed23864412bef48e -- constraint_test.go
