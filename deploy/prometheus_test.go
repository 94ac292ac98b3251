package deploy

import "testing"

// TestAlertRulesPassPromtool: the rule file is valid and lint-free, and
// its unit test (connector-alerts_test.yaml: each alert fires on the
// series that should set it off and stays quiet on the others) passes.
func TestAlertRulesPassPromtool(t *testing.T) {
	promtool := tool(t, "promtool", "`apt-get install -y prometheus` (Debian's package; only /usr/bin/promtool is needed), or run scripts/test, which does")
	run(t, "prometheus", promtool, "check", "rules", "--lint=all", "--lint-fatal", "connector-alerts.yaml")
	run(t, "prometheus", promtool, "test", "rules", "connector-alerts_test.yaml")
}
