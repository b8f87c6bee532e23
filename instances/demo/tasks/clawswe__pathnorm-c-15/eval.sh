#!/bin/bash
set -uxo pipefail
# one output stream: docker reads stdout and stderr through separate pipes and can
# splice a stderr chunk (cargo's progress, this script's trace) into a half-read line
exec 2>&1
cd /testbed
git config --global --add safe.directory /testbed
git status
git show --stat HEAD
git -c core.fileMode=false diff 5b597347ee7b7c7b00fc7495f609ebb947e14b9b
git checkout 5b597347ee7b7c7b00fc7495f609ebb947e14b9b -- tests/join_test.cc tests/normalize_test.cc tests/relative_test.cc
git apply -v - <<'EOF_114329324912'
diff --git a/tests/join_test.cc b/tests/join_test.cc
index dff77ca..de477ff 100644
--- a/tests/join_test.cc
+++ b/tests/join_test.cc
@@ -20,6 +20,12 @@ TEST(Join, ResolvesDotDotInRel)
     EXPECT_EQ(take(path_join("a/b", "../../c")), "c");
 }
 
+TEST(Join, BaseAboveTheCurrentDirectory)
+{
+    EXPECT_EQ(take(path_join("../..", "include")), "../../include");
+    EXPECT_EQ(take(path_join("..", "../x")), "../../x");
+}
+
 TEST(Join, EmptyBase)
 {
     EXPECT_EQ(take(path_join("", "x/./y")), "x/y");
diff --git a/tests/normalize_test.cc b/tests/normalize_test.cc
index 94ae9cc..0e137e5 100644
--- a/tests/normalize_test.cc
+++ b/tests/normalize_test.cc
@@ -31,6 +31,13 @@ TEST(Normalize, KeepsLeadingDotDotOfRelativePath)
     EXPECT_EQ(take(path_normalize("a/../../b")), "../b");
 }
 
+TEST(Normalize, KeepsEveryLeadingDotDot)
+{
+    EXPECT_EQ(take(path_normalize("../../x")), "../../x");
+    EXPECT_EQ(take(path_normalize("a/../../../b")), "../../b");
+    EXPECT_EQ(take(path_normalize("../a/../..")), "../..");
+}
+
 TEST(Normalize, EmptyAndDotBecomeDot)
 {
     EXPECT_EQ(take(path_normalize("")), ".");
diff --git a/tests/relative_test.cc b/tests/relative_test.cc
index ef4a833..a90366d 100644
--- a/tests/relative_test.cc
+++ b/tests/relative_test.cc
@@ -19,6 +19,12 @@ TEST(Relative, ToSibling)
     EXPECT_EQ(take(path_relative("src/a", "src/b/c")), "../b/c");
 }
 
+TEST(Relative, UpSeveralLevels)
+{
+    EXPECT_EQ(take(path_relative("/srv/app/releases/42", "/srv/app/shared/config")), "../../shared/config");
+    EXPECT_EQ(take(path_relative("/a/b/c", "/")), "../../..");
+}
+
 TEST(Relative, ToParent)
 {
     EXPECT_EQ(take(path_relative("/srv/app", "/srv")), "..");
@@ -47,3 +53,9 @@ TEST(Dirname, OfRelativePaths)
     EXPECT_EQ(take(path_dirname("a")), ".");
     EXPECT_EQ(take(path_dirname("../a")), "..");
 }
+
+TEST(Dirname, OfParentDirectories)
+{
+    EXPECT_EQ(take(path_dirname("..")), "../..");
+    EXPECT_EQ(take(path_dirname("../..")), "../../..");
+}
EOF_114329324912
: '>>>>> Start Test Output'
make check
: '>>>>> End Test Output'
git checkout 5b597347ee7b7c7b00fc7495f609ebb947e14b9b -- tests/join_test.cc tests/normalize_test.cc tests/relative_test.cc
