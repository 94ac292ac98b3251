package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/connector-dev/connector/internal/kafkatest"
)

// TestKafkaSinkAuthorizationFailuresStopTheJobNamingThem: on the tight
// broker's SASL listener, where an authorizer allows the user connector
// only what ACLs grant, a job writing to a Kafka topic is given every
// right it needs but one:
//
//   - no-transactional-id: nothing on the transactional ids <job>-w*: the
//     sink cannot initialise them (TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
//   - no-write-on-output: everything on its output topic but WRITE: the
//     sink's produce requests are refused (TOPIC_AUTHORIZATION_FAILED).
//
// Either way the job stops with exit status 1 and an error naming the
// broker's refusal, and no id reaches the output topic. (The rights the
// job has: READ and DESCRIBE on its input topic, everything on groups
// named <job>*, everything on the transactional ids <job>-w* and on the
// output topic, but for the one right taken away; DESCRIBE_CONFIGS on the
// cluster.)
func TestKafkaSinkAuthorizationFailuresStopTheJobNamingThem(t *testing.T) {
	b := tightCluster(t)
	sasl := tightSASL(t)
	for _, tc := range []struct {
		name string
		deny string // the right not granted
		want string
	}{
		{"no-transactional-id", "txn", "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"},
		{"no-write-on-output", "write", "TOPIC_AUTHORIZATION_FAILED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := newJob(t, b, jobSpec{Parallelism: 2, KafkaSink: &kafkaSinkSpec{}, Config: map[string]map[string]any{
				"kafka":      {"brokers": []string{sasl}, "sasl": map[string]any{"mechanism": "PLAIN", "username": tightUser, "password": tightPassword, "allow_cleartext": true}},
				"checkpoint": {"timeout": "5s"},
				"sink":       {"transaction_timeout": "6s"},
				"restart":    {"initial_backoff": "100ms"},
			}})
			grant(t, b, kadm.NewACLs().Topics(j.topic).Operations(kadm.OpRead, kadm.OpDescribe))
			grant(t, b, kadm.NewACLs().Groups(j.name).ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpAll))
			grant(t, b, kadm.NewACLs().Clusters().Operations(kadm.OpDescribeConfigs))
			if tc.deny == "write" {
				grant(t, b, kadm.NewACLs().Topics(j.outTopic).Operations(kadm.OpRead, kadm.OpDescribe, kadm.OpDescribeConfigs))
			} else {
				grant(t, b, kadm.NewACLs().Topics(j.outTopic).Operations(kadm.OpAll))
			}
			if tc.deny != "txn" {
				grant(t, b, kadm.NewACLs().TransactionalIDs(j.name+"-w").ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpAll))
			}
			produceIDs(t, b, j.topic, 0, 1_000, false)
			p := j.start()
			if !p.wait(time.Minute) {
				// Say what the still running job did meanwhile.
				cps, _ := p.metric(metricCheckpoints)
				out, _ := j.out.read()
				j.errorf(p, "%s still running a minute after its start, want exit status 1 naming %s; meanwhile it completed %v checkpoints, its group committed %v of the input's ends %v, and the output topic holds %d records",
					p, tc.want, cps, sorted(committedOffsets(t, b, j.name, j.topic)), sorted(endOffsets(t, b, j.topic)), out.lines)
				j.kill(p)
				return
			}
			j.requireFailure(p, time.Second, tc.want)
			t.Logf("%s restarted the job in process %d times before it exited", p, len(j.restartErrors(p)))
			out, err := j.out.readAll()
			if err != nil {
				t.Fatal(err)
			}
			if out.lines > 0 || len(out.bad) > 0 {
				t.Errorf("the output topic holds %d records, want none", out.lines+len(out.bad))
			}
		})
	}
}

// grant creates ACLs allowing the tight broker's SASL user what acl says,
// from any host.
func grant(t testing.TB, b kafkatest.Brokers, acl *kadm.ACLBuilder) {
	t.Helper()
	acl = acl.Allow("User:" + tightUser).AllowHosts("*")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := kafkatest.Admin(t, b).CreateACLs(ctx, acl)
	if err != nil {
		t.Fatalf("create ACLs: %v", err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("create ACL %s %s %s: %v", r.Type, r.Name, r.Operation, r.Err)
		}
	}
}
