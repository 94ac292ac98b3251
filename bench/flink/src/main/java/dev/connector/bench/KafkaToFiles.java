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
import org.apache.flink.api.common.serialization.Encoder;
import org.apache.flink.configuration.CheckpointingOptions;
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
 *   [--parallelism 2] [--interval-ms 1000] [--group g] [--restore]
 * </pre>
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

        env.fromSource(source, WatermarkStrategy.noWatermarks(), "kafka")
                .sinkTo(sink)
                .name("files");
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
