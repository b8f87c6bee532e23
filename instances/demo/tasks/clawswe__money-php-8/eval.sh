#!/bin/bash
set -uxo pipefail
# one output stream: docker reads stdout and stderr through separate pipes and can
# splice a stderr chunk (cargo's progress, this script's trace) into a half-read line
exec 2>&1
cd /testbed
git config --global --add safe.directory /testbed
git status
git show --stat HEAD
git -c core.fileMode=false diff 659e48bf887e1187051f93b66cd53e0003baeebd
git checkout 659e48bf887e1187051f93b66cd53e0003baeebd -- tests/AllocateTest.php
git apply -v - <<'EOF_114329324912'
diff --git a/tests/AllocateTest.php b/tests/AllocateTest.php
index 23fc60f..e94d01f 100644
--- a/tests/AllocateTest.php
+++ b/tests/AllocateTest.php
@@ -51,6 +51,22 @@ final class AllocateTest extends TestCase
         $this->assertSame(['0.00 EUR', '0.00 EUR'], self::formatted(Money::ofMinor(0, 'EUR')->allocate(2, 1)));
     }
 
+    public function testNegativeAmountPartsAddUp(): void
+    {
+        $this->assertSame(['-0.03 EUR', '-0.02 EUR'], self::formatted(Money::of('-0.05', 'EUR')->allocate(1, 1)));
+        $parts = Money::ofMinor(-5, 'EUR')->allocate(1, 0, 1, 1);
+        $this->assertSame(['-0.02 EUR', '0.00 EUR', '-0.02 EUR', '-0.01 EUR'], self::formatted($parts));
+    }
+
+    public function testNegativeAmountMirrorsPositive(): void
+    {
+        foreach ([1, 7, 99, 1001] as $minor) {
+            $positive = Money::ofMinor($minor, 'USD')->allocate(3, 5, 11);
+            $negative = Money::ofMinor(-$minor, 'USD')->allocate(3, 5, 11);
+            $this->assertSame(self::formatted(array_map(fn (Money $m) => $m->negate(), $positive)), self::formatted($negative));
+        }
+    }
+
     public function testRejectsBadRatios(): void
     {
         foreach ([[], [0, 0], [1, -1]] as $ratios) {
EOF_114329324912
: '>>>>> Start Test Output'
phpunit --testdox --colors=never
: '>>>>> End Test Output'
git checkout 659e48bf887e1187051f93b66cd53e0003baeebd -- tests/AllocateTest.php
