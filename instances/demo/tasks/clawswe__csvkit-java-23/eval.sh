#!/bin/bash
set -uxo pipefail
# one output stream: docker reads stdout and stderr through separate pipes and can
# splice a stderr chunk (cargo's progress, this script's trace) into a half-read line
exec 2>&1
cd /testbed
git config --global --add safe.directory /testbed
git status
git show --stat HEAD
git -c core.fileMode=false diff 0e1d7ac9c3db1be315f16a93d0c364cd32379603
git checkout 0e1d7ac9c3db1be315f16a93d0c364cd32379603 -- src/test/java/org/clawswe/csv/CsvReaderTest.java src/test/java/org/clawswe/csv/CsvWriterTest.java src/test/java/org/clawswe/csv/RoundTripTest.java
git apply -v - <<'EOF_114329324912'
diff --git a/src/test/java/org/clawswe/csv/CsvReaderTest.java b/src/test/java/org/clawswe/csv/CsvReaderTest.java
index 30d0394..7571683 100644
--- a/src/test/java/org/clawswe/csv/CsvReaderTest.java
+++ b/src/test/java/org/clawswe/csv/CsvReaderTest.java
@@ -63,6 +63,16 @@ public class CsvReaderTest {
         assertEquals(asList(asList("a", "b"), asList("c", "d")), read("a,\"b\"\nc,\"d\""));
     }
 
+    @Test
+    public void quotedLastFieldBeforeCrlf() throws IOException {
+        assertEquals(asList(asList("id", "name"), asList("1", "Smith, J.")), read("id,name\r\n1,\"Smith, J.\"\r\n"));
+    }
+
+    @Test
+    public void quotedFieldBeforeLoneCr() throws IOException {
+        assertEquals(asList(asList("a"), asList("b")), read("\"a\"\r\"b\""));
+    }
+
     @Test
     public void otherDelimiter() throws IOException {
         assertEquals(asList(asList("a,b", "c")), read("a,b;c\n", CsvFormat.RFC4180.withDelimiter(';')));
diff --git a/src/test/java/org/clawswe/csv/CsvWriterTest.java b/src/test/java/org/clawswe/csv/CsvWriterTest.java
index 61c38ea..dc9047a 100644
--- a/src/test/java/org/clawswe/csv/CsvWriterTest.java
+++ b/src/test/java/org/clawswe/csv/CsvWriterTest.java
@@ -42,6 +42,11 @@ public class CsvWriterTest {
         assertEquals("\"two\nlines\"\r\n", write(CsvFormat.RFC4180, asList("two\nlines")));
     }
 
+    @Test
+    public void quotesCarriageReturn() throws IOException {
+        assertEquals("1,\"first\rsecond\"\r\n", write(CsvFormat.RFC4180, asList("1", "first\rsecond")));
+    }
+
     @Test
     public void quotesLeadingAndTrailingBlanks() throws IOException {
         assertEquals("\" a\",\"b \",c\r\n", write(CsvFormat.RFC4180, asList(" a", "b ", "c")));
diff --git a/src/test/java/org/clawswe/csv/RoundTripTest.java b/src/test/java/org/clawswe/csv/RoundTripTest.java
index 47a9323..ae5fac8 100644
--- a/src/test/java/org/clawswe/csv/RoundTripTest.java
+++ b/src/test/java/org/clawswe/csv/RoundTripTest.java
@@ -38,6 +38,16 @@ public class RoundTripTest {
         assertRoundTrip(CsvFormat.UNIX, asList(asList(""), asList("", ""), asList("a", "")));
     }
 
+    @Test
+    public void emptyValuesWithCrlf() throws IOException {
+        assertRoundTrip(CsvFormat.RFC4180, asList(asList(""), asList("", ""), asList("a", "")));
+    }
+
+    @Test
+    public void lineBreaksInValues() throws IOException {
+        assertRoundTrip(CsvFormat.RFC4180, asList(asList("a\rb", "c\r\nd", "e\nf"), asList("g")));
+    }
+
     @Test
     public void nonAsciiValues() throws IOException {
         assertRoundTrip(CsvFormat.RFC4180, asList(asList("Zürich", "東京", "emoji \uD83D\uDC99")));
EOF_114329324912
: '>>>>> Start Test Output'
ant test
: '>>>>> End Test Output'
git checkout 0e1d7ac9c3db1be315f16a93d0c364cd32379603 -- src/test/java/org/clawswe/csv/CsvReaderTest.java src/test/java/org/clawswe/csv/CsvWriterTest.java src/test/java/org/clawswe/csv/RoundTripTest.java
