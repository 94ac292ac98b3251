package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// groupModeAlertTest is a `promtool test rules` file for one member of a
// group-mode job (instances.mode: group) that runs two slots: every job
// metric then carries a slot label (README, "What you see"), one series
// per slot under the same job and instance. Both slots stopped completing
// checkpoints at 4m, slot 2 never completed one (its age counts from the
// process's start); slot 0 holds a Kafka transaction open for 500s of its
// 600s timeout. Each alert should fire, per slot, as it does for a
// single-mode job in connector-alerts_test.yaml.
const groupModeAlertTest = `
rule_files: [%RULES%]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: connector_checkpoint_last_completed_timestamp_seconds{job="orders", instance="member-0", slot="0"}
        values: 0+60x4 240x16
      - series: connector_checkpoint_last_completed_timestamp_seconds{job="orders", instance="member-0", slot="1"}
        values: 0+60x4 240x16
      - series: connector_checkpoint_interval_seconds{job="orders", instance="member-0", slot="0"}
        values: 1x20
      - series: connector_checkpoint_interval_seconds{job="orders", instance="member-0", slot="1"}
        values: 1x20
      - series: connector_checkpoint_timeout_seconds{job="orders", instance="member-0", slot="0"}
        values: 60x20
      - series: connector_checkpoint_timeout_seconds{job="orders", instance="member-0", slot="1"}
        values: 60x20
      - series: connector_checkpoint_last_completed_timestamp_seconds{job="orders", instance="member-0", slot="2"}
        values: 0x20
      - series: connector_checkpoint_interval_seconds{job="orders", instance="member-0", slot="2"}
        values: 1x20
      - series: connector_checkpoint_timeout_seconds{job="orders", instance="member-0", slot="2"}
        values: 60x20
      - series: process_start_time_seconds{job="orders", instance="member-0"}
        values: 0x20
      - series: connector_sink_oldest_open_transaction_seconds{job="orders", instance="member-0", slot="0"}
        values: 500x20
      - series: connector_sink_oldest_open_transaction_seconds{job="orders", instance="member-0", slot="1"}
        values: 1x20
      - series: connector_sink_transaction_timeout_seconds{job="orders", instance="member-0", slot="0"}
        values: 600x20
      - series: connector_sink_transaction_timeout_seconds{job="orders", instance="member-0", slot="1"}
        values: 600x20
    alert_rule_test:
      - eval_time: 10m
        alertname: ConnectorNoCheckpointCompleted
        exp_alerts:
          - exp_labels: {severity: critical, job: orders, instance: member-0, slot: "0"}
            exp_annotations:
              summary: "orders (member-0) has completed no checkpoint for 6m 0s"
              description: "Its output is not committed. See /api/checkpoints for why checkpoints fail or hang."
          - exp_labels: {severity: critical, job: orders, instance: member-0, slot: "1"}
            exp_annotations:
              summary: "orders (member-0) has completed no checkpoint for 6m 0s"
              description: "Its output is not committed. See /api/checkpoints for why checkpoints fail or hang."
          - exp_labels: {severity: critical, job: orders, instance: member-0, slot: "2"}
            exp_annotations:
              summary: "orders (member-0) has completed no checkpoint for 10m 0s"
              description: "Its output is not committed. See /api/checkpoints for why checkpoints fail or hang."
      - eval_time: 10m
        alertname: ConnectorKafkaTransactionNearTimeout
        exp_alerts:
          - exp_labels: {severity: warning, job: orders, instance: member-0, slot: "0"}
            exp_annotations:
              summary: "orders (member-0) holds a Kafka transaction open for 8m 20s"
              description: "Near sink.transaction_timeout: checkpoints are not completing, so the transaction is not committed."
`

// TestReviewObsAlertsFireForAGroupMemberRunningSeveralSlots: the shipped
// alert rules evaluate for a group-mode member that runs two slots. They
// match the job's gauges "on (job, instance)", which in group mode is one
// series per slot on each side: Prometheus refuses the rule ("many-to-many
// matching not allowed"), so ConnectorNoCheckpointCompleted (critical) and
// ConnectorKafkaTransactionNearTimeout never fire for such a process, the
// normal case with instances.slots 8 and fewer pods.
func TestReviewObsAlertsFireForAGroupMemberRunningSeveralSlots(t *testing.T) {
	promtool := tool(t, "promtool", "`apt-get install -y prometheus` (Debian's package; only /usr/bin/promtool is needed), or run scripts/test, which does")
	rules, err := filepath.Abs("prometheus/connector-alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "group-mode_test.yaml")
	text := []byte(strings.ReplaceAll(groupModeAlertTest, "%RULES%", rules))
	if err := os.WriteFile(path, text, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "test", "rules", path).CombinedOutput(); err != nil {
		t.Errorf("promtool test rules, group-mode series: %v\n%s", err, out)
	}
}
