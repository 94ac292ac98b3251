package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/checkpoint/s3storage"
	"github.com/connector-dev/connector/checkpoint/store"
	"github.com/connector-dev/connector/config"
	"github.com/connector-dev/connector/group"
	"github.com/connector-dev/connector/internal/binpages"
	"github.com/connector-dev/connector/internal/cfgkey"
	"github.com/connector-dev/connector/internal/crashpoint"
	"github.com/connector-dev/connector/internal/gctune"
	"github.com/connector-dev/connector/internal/httpapi"
	"github.com/connector-dev/connector/internal/kafkaclient"
	"github.com/connector-dev/connector/internal/metrics"
	"github.com/connector-dev/connector/pipeline"
	"github.com/connector-dev/connector/sink"
	kafkasink "github.com/connector-dev/connector/sink/kafka"
)

func init() {
	register("run", command{
		summary: "run a job until SIGINT/SIGTERM, then take a final checkpoint and exit 0",
		run:     runRun,
	})
}

// runRun: connector run --config FILE [--log-level LEVEL] [--log-format FORMAT]
func runRun(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("run", "--config FILE [--log-level LEVEL] [--log-format FORMAT]", stdout, stderr)
	path := configFlag(fs)
	logs := addLogFlags(fs, "")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	job, ok := loadJob(*path, stderr)
	if !ok {
		return exitUsage
	}
	log, ok := logs.logger(job, stderr)
	if !ok {
		return exitUsage
	}
	if err := crashpoint.Validate(); err != nil {
		fmt.Fprintf(stderr, "connector run: %v\n", err)
		return exitUsage
	}
	if err := runJob(ctx, job, log, newRegistry(), nil); err != nil {
		log.Error().Err(err).Msg("job failed")
		if configFault(err) {
			fmt.Fprintln(stderr, configFaultText(job, err))
			return exitUsage
		}
		return exitFailure
	}
	return exitOK
}

// configFault reports whether err, a job's failure, is its config's fault
// found only by asking the sink's system, the checkpoint storage or the
// brokers (a table, topic or bucket that does not exist, refused
// credentials, a certificate not trusted), or by the directories it names
// (a single-mode job on a group's checkpoint.dir): run and dev exit 2 on
// it, as validate does on a bad file.
func configFault(err error) bool {
	return errors.Is(err, sink.ErrInvalidConfig) || errors.Is(err, s3storage.ErrInvalidConfig) || errors.Is(err, kafkaclient.ErrMisconfigured) ||
		errors.Is(err, group.ErrRanInGroupMode)
}

// configFaultText is a config fault as a config.Error prints: "file:line:
// err", at the line of the key err is about (cfgkey), or "file: err" when
// it names none.
func configFaultText(job *config.Job, err error) string {
	line := 0
	if key, ok := cfgkey.Of(err); ok {
		line = job.Line(key)
	}
	return (&config.Error{File: job.File(), Line: line, Msg: err.Error()}).Error()
}

// newRegistry is the process's metrics registry: Go runtime, process and
// connector_build_info, to which the job adds its own.
func newRegistry() *prometheus.Registry {
	return metrics.NewRegistry(buildInfo())
}

// runJob serves HTTP and runs the job until ctx ends and its final
// checkpoint completed; the job's metrics go to reg, which /metrics serves.
// started, if not nil, is called with the HTTP address once the server
// listens. In group mode the process runs as one member of the job's
// group (package group), its slots' jobs behind the same endpoints.
func runJob(ctx context.Context, cfg *config.Job, log zerolog.Logger, reg *prometheus.Registry, started func(addr string)) error {
	// One job's processes all run in one mode on one checkpoint.dir.
	mode, err := store.LockMode(cfg.Checkpoint.Dir, cfg.Instances.Group())
	if err != nil {
		return err
	}
	defer mode.Close()
	process := singleJob
	if cfg.Instances.Group() {
		process = groupMember
	} else if err := group.RefuseSingle(cfg); err != nil {
		return err
	}
	srvCfg, run := process(cfg, log, reg)
	srvCfg.Addr, srvCfg.Log = cfg.HTTP.Addr, log
	srv, err := httpapi.Start(srvCfg)
	if err != nil {
		return err // httpapi's error says http, the address and the cause
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Close(sctx)
	}()
	log.Info().Str("version", buildInfo().Version).Str("http", srv.Addr()).Str("config", cfg.File()).Str("instances", string(cfg.Instances.Mode)).Msg("connector starting")
	warnInsecure(log, cfg)
	if started != nil {
		started(srv.Addr())
	}
	// GOGC tuned while the job runs, restored before runJob returns.
	stopTuning := gctune.Start(log, gctune.Default, time.Second)
	defer stopTuning()
	// What starting read of the binary (every package's initialisers,
	// the config's checks) need not stay resident while the job runs.
	if n, err := binpages.Release(); err != nil {
		log.Warn().Err(err).Msg("the binary's pages read at start stay resident")
	} else {
		log.Debug().Int64("bytes", n).Msg("the binary's pages read at start given back")
	}
	return run(ctx)
}

// singleJob is a process that runs the whole job.
func singleJob(cfg *config.Job, log zerolog.Logger, reg *prometheus.Registry) (httpapi.Config, func(context.Context) error) {
	job := pipeline.New(cfg, pipeline.Options{Registry: reg, Log: log})
	return httpapi.Config{
		Metrics:     reg,
		Ready:       job.Ready,
		Live:        job.Live,
		Checkpoints: func() (any, error) { return job.Status(), nil },
		Job: func() (any, error) {
			info := job.Info()
			info.Version = buildInfo().Version
			return info, nil
		},
	}, job.Run
}

// groupMember is a process that runs the slots the job's group gives it.
func groupMember(cfg *config.Job, log zerolog.Logger, reg *prometheus.Registry) (httpapi.Config, func(context.Context) error) {
	m := group.New(cfg, group.Options{Registry: reg, Log: log})
	return httpapi.Config{
		Metrics:     prometheus.GathererFunc(m.Gather),
		Ready:       m.Ready,
		Live:        m.Live,
		Checkpoints: func() (any, error) { return m.Status(), nil },
		Job: func() (any, error) {
			info := m.Info()
			info.Version = buildInfo().Version
			return info, nil
		},
	}, m.Run
}

// warnInsecure says loudly, at every start, what weakens the connection
// to the brokers.
func warnInsecure(log zerolog.Logger, cfg *config.Job) {
	warnInsecureCluster(log, "kafka", cfg.Kafka)
	if sc, ok := cfg.Sink.Config.(*kafkasink.Config); ok && len(sc.Brokers) > 0 {
		warnInsecureCluster(log, "sink", config.Kafka{Brokers: sc.Brokers, SASL: sc.SASL, TLS: sc.TLS})
	}
}

// warnInsecureCluster warns of k's insecure settings, under section's keys.
func warnInsecureCluster(log zerolog.Logger, section string, k config.Kafka) {
	if k.TLS.InsecureSkipVerify {
		log.Warn().Str("key", section+".tls.insecure_skip_verify").Msg("INSECURE: the brokers' certificates are not verified: anyone on the network path can pose as the cluster and read or change every record")
	}
	if k.SASL.AllowCleartext && !k.TLS.On() && (k.SASL.Mechanism == config.SASLPlain || k.SASL.Mechanism == config.SASLOAuthBearer) {
		log.Warn().Str("key", section+".sasl.allow_cleartext").Str("mechanism", string(k.SASL.Mechanism)).Msg("INSECURE: the SASL secret crosses the network in clear (no " + section + ".tls)")
	}
}
