#!/bin/bash
set -uxo pipefail
# one output stream: docker reads stdout and stderr through separate pipes and can
# splice a stderr chunk (cargo's progress, this script's trace) into a half-read line
exec 2>&1
cd /testbed
git config --global --add safe.directory /testbed
git status
git show --stat HEAD
git -c core.fileMode=false diff fc0de292d5cd0295cfc17b53f7938f27f6748989
git checkout fc0de292d5cd0295cfc17b53f7938f27f6748989 -- test/schedule.test.js
git apply -v - <<'EOF_114329324912'
diff --git a/test/schedule.test.js b/test/schedule.test.js
index 8b2decd..caaf09b 100644
--- a/test/schedule.test.js
+++ b/test/schedule.test.js
@@ -27,6 +27,18 @@ test('day of month only', () => {
   assert.equal(nextAfter('0 12 31 * *', '2024-04-01T00:00:00Z'), '2024-05-31T12:00:00.000Z');
 });
 
+test('day of month or day of week when both are given', () => {
+  // 2024-04-08 is a Monday; the 1st of May is a Wednesday
+  assert.equal(nextAfter('0 9 1 * MON', '2024-04-02T00:00:00Z'), '2024-04-08T09:00:00.000Z');
+  assert.equal(nextAfter('0 9 1 * MON', '2024-04-29T10:00:00Z'), '2024-05-01T09:00:00.000Z');
+  assert.ok(cron.parse('0 9 1,15 * FRI').matches(at('2024-04-19T09:00:00Z')));
+});
+
+test('a day field starting with a star still narrows the other', () => {
+  // "*/2" counts as unrestricted, so both must match: odd dates that are Mondays
+  assert.equal(nextAfter('0 0 */2 * MON', '2024-04-02T00:00:00Z'), '2024-04-15T00:00:00.000Z');
+});
+
 test('leap day', () => {
   assert.equal(nextAfter('0 0 29 2 *', '2024-03-01T00:00:00Z'), '2028-02-29T00:00:00.000Z');
 });
@@ -35,6 +47,10 @@ test('a schedule that never fires', () => {
   assert.throws(() => cron.parse('0 0 30 2 *').next(at('2024-01-01T00:00:00Z')), RangeError);
 });
 
+test('an impossible date is rescued by the weekday', () => {
+  assert.equal(nextAfter('0 0 30 2 MON', '2024-01-01T00:00:00Z'), '2024-02-05T00:00:00.000Z');
+});
+
 test('matches', () => {
   const job = cron.parse('0 8 * JAN,JUL SUN');
   assert.ok(job.matches(at('2024-01-07T08:00:00Z')));
EOF_114329324912
: '>>>>> Start Test Output'
node --test --test-reporter=tap test/
: '>>>>> End Test Output'
git checkout fc0de292d5cd0295cfc17b53f7938f27f6748989 -- test/schedule.test.js
