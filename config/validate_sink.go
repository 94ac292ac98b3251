package config

import "slices"

// sinkKeys lists, per sink type, the keys besides "type" that it reads.
var sinkKeys = map[SinkType][]string{
	SinkFile:     {"path", "format", "roll_size", "roll_age"},
	SinkKafka:    {"topic", "transaction_timeout"},
	SinkPostgres: {"dsn", "table", "mode", "key_column"},
	SinkStdout:   {"format"},
}

var allSinkKeys = []string{"path", "format", "roll_size", "roll_age", "topic", "transaction_timeout", "dsn", "table", "mode", "key_column"}

func (v *validator) sink() {
	s := v.j.Sink
	if s.Type == "" {
		v.errs.add("sink.type", "is required (one of file, kafka, postgres or stdout)")
		return
	}
	keys, ok := sinkKeys[s.Type]
	if !ok {
		oneOf(v, "sink.type", "sink type", string(s.Type), SinkFile, SinkKafka, SinkPostgres, SinkStdout)
		return
	}
	for _, k := range allSinkKeys {
		if v.j.src.isSet("sink."+k) && !slices.Contains(keys, k) {
			v.errs.add("sink."+k, "is not used by sink type %s", s.Type)
		}
	}
	switch s.Type {
	case SinkFile:
		v.requiredFor("sink.path", s.Path, s.Type)
		oneOf(v, "sink.format", "format", string(s.Format), FormatJSONL, FormatRaw)
		v.positiveSize("sink.roll_size", s.RollSize)
		v.positive("sink.roll_age", s.RollAge)
	case SinkStdout:
		oneOf(v, "sink.format", "format", string(s.Format), FormatJSONL, FormatRaw)
	case SinkKafka:
		v.requiredFor("sink.topic", s.Topic, s.Type)
		if v.isSourceTopic(s.Topic) {
			v.errs.add("sink.topic", "%q is also a source topic", s.Topic)
		}
		if s.TransactionTimeout <= v.j.Checkpoint.Timeout {
			v.errs.add("sink.transaction_timeout", "%v must be longer than checkpoint.timeout (%v)", s.TransactionTimeout, v.j.Checkpoint.Timeout)
		}
	case SinkPostgres:
		v.requiredFor("sink.dsn", s.DSN.Value(), s.Type)
		v.requiredFor("sink.table", s.Table, s.Type)
		oneOf(v, "sink.mode", "mode", string(s.Mode), Postgres2PC, PostgresUpsert)
		switch {
		case s.Mode == PostgresUpsert && s.KeyColumn == "":
			v.errs.add("sink.key_column", "is required with mode upsert")
		case s.Mode != PostgresUpsert && s.KeyColumn != "":
			v.errs.add("sink.key_column", "is only used with mode upsert")
		}
	}
}

func (v *validator) requiredFor(key, s string, t SinkType) {
	if s == "" {
		v.errs.add(key, "is required for sink type %s", t)
	}
}
