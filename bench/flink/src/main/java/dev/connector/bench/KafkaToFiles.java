package dev.connector.bench;

import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.stream.Stream;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.StateTtlConfig;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.configuration.StateBackendOptions;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.Collector;
import java.nio.charset.StandardCharsets;
import org.apache.flink.api.common.serialization.Encoder;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.ExternalizedCheckpointRetention;
import org.apache.flink.configuration.StateRecoveryOptions;
import org.apache.flink.connector.file.sink.FileSink;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.connector.kafka.source.reader.deserializer.KafkaRecordDeserializationSchema;
import org.apache.flink.core.execution.CheckpointingMode;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.filesystem.OutputFileConfig;
import org.apache.flink.streaming.api.functions.sink.filesystem.bucketassigners.BasePathBucketAssigner;
import org.apache.flink.streaming.api.functions.sink.filesystem.rollingpolicies.OnCheckpointRollingPolicy;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Flink contender of bench/run: Kafka topic -> files, one record value per line,
 * exactly-once. A DataStream job (KafkaSource -> FileSink in row format), run in a local
 * mini cluster inside this JVM, checkpointing every --interval-ms into --checkpoints.
 *
 * <p>Like the connector's file sink, a part file is rolled at every checkpoint and becomes
 * visible (loses its leading '.') when that checkpoint completes; values are copied as
 * bytes, not decoded. With --restore the job resumes from the newest retained checkpoint
 * under --checkpoints (after a SIGKILL), as `flink run -s` would.
 *
 * <pre>
 * java -cp 'flink-bench.jar:lib/*' dev.connector.bench.KafkaToFiles \
 *   --brokers 127.0.0.1:39092 --topic bench-100b --out /tmp/out --checkpoints /tmp/chk \
 *   [--parallelism 2] [--interval-ms 1000] [--group g] [--restore] [--dedup-key u --ttl-ms 900000]
 *   [--rocksdb-dir /tmp/rocksdb]
 * </pre>
 *
 * <p>With --dedup-key, the connector's dedup transform as a Flink user would write it:
 * keyBy the value's string field (found by a byte search, cheaper than the connector's
 * JSON parse), a keyed ValueState of the first sighting's record time on the RocksDB state
 * backend with incremental checkpoints, and the connector's rule on record time: a record
 * is dropped while its timestamp is before first sighting + TTL. The state also has
 * Flink's state TTL (processing time, the only kind Flink has; cleaned up in RocksDB's
 * compaction filter), which expires nothing during a drain of a minute. --rocksdb-dir puts
 * RocksDB's working files there (state.backend.rocksdb.localdir; by default they are under
 * the JVM's temporary directory), for bench/state-growth to measure.
 */
public final class KafkaToFiles {
    private static final Logger LOG = LoggerFactory.getLogger(KafkaToFiles.class);

    /** Writes a value's bytes and a newline: the connector's jsonl format. */
    static final class LineEncoder implements Encoder<byte[]> {
        private static final long serialVersionUID = 1L;

        @Override
        public void encode(byte[] value, OutputStream out) throws IOException {
            out.write(value);
            out.write('\n');
        }
    }

    /** The value of a JSON string field, by a byte search for "key":"; "" if absent. */
    static String field(byte[] v, byte[] pattern) {
        outer:
        for (int i = 0; i + pattern.length <= v.length; i++) {
            for (int j = 0; j < pattern.length; j++) {
                if (v[i + j] != pattern[j]) {
                    continue outer;
                }
            }
            int start = i + pattern.length, end = start;
            while (end < v.length && v[end] != '"') {
                end++;
            }
            return new String(v, start, end - start, StandardCharsets.UTF_8);
        }
        return "";
    }

    /** The dedup: keeps a record unless its key was first seen less than ttl before it. */
    static final class Dedup extends KeyedProcessFunction<String, byte[], byte[]> {
        private static final long serialVersionUID = 1L;
        private final long ttlMs;
        private transient ValueState<Long> first;

        Dedup(long ttlMs) {
            this.ttlMs = ttlMs;
        }

        @Override
        public void open(OpenContext ctx) {
            ValueStateDescriptor<Long> d = new ValueStateDescriptor<>("first", Long.class);
            d.enableTimeToLive(StateTtlConfig.newBuilder(Duration.ofMillis(ttlMs))
                    .setUpdateType(StateTtlConfig.UpdateType.OnCreateAndWrite)
                    .setStateVisibility(StateTtlConfig.StateVisibility.NeverReturnExpired)
                    .cleanupInRocksdbCompactFilter(1000)
                    .build());
            first = getRuntimeContext().getState(d);
        }

        @Override
        public void processElement(byte[] value, Context ctx, Collector<byte[]> out) throws Exception {
            long now = ctx.timestamp() == null ? 0 : ctx.timestamp();
            Long f = first.value();
            if (f != null && now < f + ttlMs) {
                return;
            }
            first.update(now);
            out.collect(value);
        }
    }

    /** RocksDB's working directory (RocksDBOptions.LOCAL_DIRECTORIES), by its key. */
    static final ConfigOption<String> ROCKSDB_LOCAL_DIR =
            ConfigOptions.key("state.backend.rocksdb.localdir").stringType().noDefaultValue();

    public static void main(String[] args) throws Exception {
        Map<String, String> a = parse(args);
        String brokers = need(a, "brokers");
        String topic = need(a, "topic");
        String out = need(a, "out");
        String checkpoints = need(a, "checkpoints");
        int parallelism = Integer.parseInt(a.getOrDefault("parallelism", "1"));
        long intervalMs = Long.parseLong(a.getOrDefault("interval-ms", "1000"));
        String group = a.getOrDefault("group", "flink-bench");

        Configuration conf = new Configuration();
        conf.set(CheckpointingOptions.CHECKPOINT_STORAGE, "filesystem");
        conf.set(CheckpointingOptions.CHECKPOINTS_DIRECTORY, new File(checkpoints).toURI().toString());
        conf.set(CheckpointingOptions.EXTERNALIZED_CHECKPOINT_RETENTION,
                ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION);
        conf.set(CheckpointingOptions.MAX_RETAINED_CHECKPOINTS, 3);
        conf.set(CheckpointingOptions.MAX_CONCURRENT_CHECKPOINTS, 1);
        conf.set(CheckpointingOptions.CHECKPOINTING_TIMEOUT, Duration.ofSeconds(60));
        String dedupKey = a.get("dedup-key");
        long ttlMs = Long.parseLong(a.getOrDefault("ttl-ms", "600000"));
        if (dedupKey != null) {
            conf.set(StateBackendOptions.STATE_BACKEND, "rocksdb");
            conf.set(CheckpointingOptions.INCREMENTAL_CHECKPOINTS, true);
            if (a.containsKey("rocksdb-dir")) {
                conf.set(ROCKSDB_LOCAL_DIR, new File(a.get("rocksdb-dir")).getAbsolutePath());
            }
        }
        if (a.containsKey("restore")) {
            Path latest = latestCheckpoint(Path.of(checkpoints));
            if (latest == null) {
                throw new IllegalStateException("--restore: no completed checkpoint under " + checkpoints);
            }
            LOG.info("restoring from {}", latest);
            conf.set(StateRecoveryOptions.SAVEPOINT_PATH, latest.toUri().toString());
        }

        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
        env.setParallelism(parallelism);
        env.enableCheckpointing(intervalMs, CheckpointingMode.EXACTLY_ONCE);

        KafkaSource<byte[]> source = KafkaSource.<byte[]>builder()
                .setBootstrapServers(brokers)
                .setTopics(topic)
                .setGroupId(group)
                .setStartingOffsets(OffsetsInitializer.earliest())
                .setDeserializer(KafkaRecordDeserializationSchema.valueOnly(ByteArrayDeserializer.class))
                .setProperty("isolation.level", "read_committed")
                .build();

        FileSink<byte[]> sink = FileSink.forRowFormat(new org.apache.flink.core.fs.Path(new File(out).toURI()),
                        new LineEncoder())
                .withBucketAssigner(new BasePathBucketAssigner<>())
                .withRollingPolicy(OnCheckpointRollingPolicy.build())
                .withOutputFileConfig(OutputFileConfig.builder().withPartPrefix("part").withPartSuffix(".jsonl").build())
                .build();

        DataStream<byte[]> in = env.fromSource(source, WatermarkStrategy.noWatermarks(), "kafka");
        if (dedupKey != null) {
            byte[] pattern = ("\"" + dedupKey + "\":\"").getBytes(StandardCharsets.UTF_8);
            in = in.keyBy(v -> field(v, pattern)).process(new Dedup(ttlMs)).name("dedup");
        }
        in.sinkTo(sink).name("files");
        env.execute("kafka-to-files");
    }

    /** The chk-N directory with a _metadata file that was written last, or null. */
    static Path latestCheckpoint(Path root) throws IOException {
        if (!Files.isDirectory(root)) {
            return null;
        }
        try (Stream<Path> s = Files.walk(root, 2)) {
            return s.filter(p -> p.getFileName().toString().startsWith("chk-"))
                    .filter(p -> Files.isRegularFile(p.resolve("_metadata")))
                    .max((x, y) -> Long.compare(mtime(x.resolve("_metadata")), mtime(y.resolve("_metadata"))))
                    .orElse(null);
        }
    }

    private static long mtime(Path p) {
        try {
            return Files.getLastModifiedTime(p).toMillis();
        } catch (IOException e) {
            return Long.MIN_VALUE;
        }
    }

    static Map<String, String> parse(String[] args) {
        Map<String, String> m = new HashMap<>();
        for (int i = 0; i < args.length; i++) {
            if (!args[i].startsWith("--")) {
                throw new IllegalArgumentException("unexpected argument " + args[i]);
            }
            String k = args[i].substring(2);
            if (k.equals("restore")) {
                m.put(k, "true");
            } else if (i + 1 < args.length) {
                m.put(k, args[++i]);
            } else {
                throw new IllegalArgumentException("--" + k + " needs a value");
            }
        }
        return m;
    }

    static String need(Map<String, String> m, String k) {
        String v = m.get(k);
        if (v == null) {
            throw new IllegalArgumentException("--" + k + " is required");
        }
        return v;
    }
}
