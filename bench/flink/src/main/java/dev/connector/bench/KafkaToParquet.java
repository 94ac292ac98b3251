package dev.connector.bench;

import java.io.File;
import java.io.IOException;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.ExternalizedCheckpointRetention;
import org.apache.flink.connector.file.sink.FileSink;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.connector.kafka.source.reader.deserializer.KafkaRecordDeserializationSchema;
import org.apache.flink.core.execution.CheckpointingMode;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.core.fs.Path;
import org.apache.flink.formats.parquet.ParquetBuilder;
import org.apache.flink.formats.parquet.ParquetWriterFactory;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.filesystem.OutputFileConfig;
import org.apache.flink.streaming.api.functions.sink.filesystem.bucketassigners.BasePathBucketAssigner;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.parquet.conf.ParquetConfiguration;
import org.apache.parquet.hadoop.ParquetWriter;
import org.apache.parquet.hadoop.api.WriteSupport;
import org.apache.parquet.hadoop.metadata.CompressionCodecName;
import org.apache.parquet.io.OutputFile;
import org.apache.parquet.io.api.Binary;
import org.apache.parquet.io.api.RecordConsumer;
import org.apache.parquet.schema.LogicalTypeAnnotation;
import org.apache.parquet.schema.MessageType;
import org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName;
import org.apache.parquet.schema.Types;

/**
 * The Flink contender of bench/run's Kafka-to-Parquet experiment (flink-parquet): Kafka
 * topic -> Parquet files, exactly-once. A DataStream job, KafkaSource -> FileSink in bulk
 * format (flink-parquet's ParquetWriterFactory), run in a local mini cluster inside this
 * JVM, checkpointing every --interval-ms into --checkpoints. A bulk format rolls its part
 * file at every checkpoint (OnCheckpointRollingPolicy, the only policy FileSink allows for
 * bulk formats): one file per subtask and checkpoint.
 *
 * <p>Each value (bench/cmd/load's JSON) is parsed with Jackson's streaming parser and
 * written by a parquet-hadoop WriteSupport straight into the row's columns, the same
 * columns as the connector's parquet config: id, u, h, status, p (string) and amount
 * (double), all required; zstd, parquet-hadoop's defaults otherwise. (No Avro: a
 * GenericRecord per value would only cost more.)
 *
 * <p>--out is a local directory or an s3://bucket/prefix URI; for S3, flink-s3-fs-hadoop
 * (on the class path, loaded by FileSystem.initialize) with --s3-endpoint, path-style
 * requests and the credentials of AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY. Its
 * recoverable writer makes every in-progress file a multipart upload, completed when the
 * checkpoint that rolled it completes.
 *
 * <pre>
 * java -cp 'flink-bench.jar:lib/*' dev.connector.bench.KafkaToParquet \
 *   --brokers 127.0.0.1:39092 --topic bench-100b --out s3://bucket/out --checkpoints /tmp/chk \
 *   [--s3-endpoint http://127.0.0.1:39910] [--part-size 16777216] [--parallelism 2] [--interval-ms 1000] [--group g]
 * </pre>
 */
public final class KafkaToParquet {

    /** The columns, as the connector's parquet: section names them. */
    static final MessageType SCHEMA = Types.buildMessage()
            .required(PrimitiveTypeName.BINARY).as(LogicalTypeAnnotation.stringType()).named("id")
            .required(PrimitiveTypeName.BINARY).as(LogicalTypeAnnotation.stringType()).named("u")
            .required(PrimitiveTypeName.BINARY).as(LogicalTypeAnnotation.stringType()).named("h")
            .required(PrimitiveTypeName.DOUBLE).named("amount")
            .required(PrimitiveTypeName.BINARY).as(LogicalTypeAnnotation.stringType()).named("status")
            .required(PrimitiveTypeName.BINARY).as(LogicalTypeAnnotation.stringType()).named("p")
            .named("bench");

    static final String[] NAMES = {"id", "u", "h", "amount", "status", "p"};
    static final int AMOUNT = 3;

    /** Parses a JSON value and writes its fields as one row. */
    static final class JsonWriteSupport extends WriteSupport<byte[]> {
        private static final JsonFactory JSON = new JsonFactory();
        private RecordConsumer out;
        private final String[] text = new String[NAMES.length];
        private double amount;

        @Override
        public WriteContext init(org.apache.hadoop.conf.Configuration conf) {
            return new WriteContext(SCHEMA, new HashMap<>());
        }

        @Override
        public WriteContext init(ParquetConfiguration conf) {
            return new WriteContext(SCHEMA, new HashMap<>());
        }

        @Override
        public void prepareForWrite(RecordConsumer consumer) {
            out = consumer;
        }

        @Override
        public void write(byte[] value) {
            boolean hasAmount = false;
            java.util.Arrays.fill(text, null);
            try (JsonParser p = JSON.createParser(value)) {
                if (p.nextToken() != JsonToken.START_OBJECT) {
                    throw new IllegalArgumentException("not a JSON object");
                }
                while (p.nextToken() == JsonToken.FIELD_NAME) {
                    int i = index(p.currentName());
                    JsonToken t = p.nextToken();
                    if (i < 0) {
                        p.skipChildren();
                    } else if (i == AMOUNT) {
                        amount = p.getDoubleValue();
                        hasAmount = true;
                    } else if (t == JsonToken.VALUE_STRING) {
                        text[i] = p.getText();
                    } else {
                        throw new IllegalArgumentException("field " + NAMES[i] + " is no string");
                    }
                }
            } catch (IOException e) {
                throw new IllegalArgumentException("bad JSON value", e);
            }
            out.startMessage();
            for (int i = 0; i < NAMES.length; i++) {
                out.startField(NAMES[i], i);
                if (i == AMOUNT) {
                    if (!hasAmount) {
                        throw new IllegalArgumentException("no amount");
                    }
                    out.addDouble(amount);
                } else {
                    if (text[i] == null) {
                        throw new IllegalArgumentException("no " + NAMES[i]);
                    }
                    out.addBinary(Binary.fromString(text[i]));
                }
                out.endField(NAMES[i], i);
            }
            out.endMessage();
        }

        private static int index(String name) {
            switch (name) {
                case "id": return 0;
                case "u": return 1;
                case "h": return 2;
                case "amount": return 3;
                case "status": return 4;
                case "p": return 5;
                default: return -1;
            }
        }
    }

    static final class Builder extends ParquetWriter.Builder<byte[], Builder> {
        Builder(OutputFile file) {
            super(file);
        }

        @Override
        protected Builder self() {
            return this;
        }

        @Override
        protected WriteSupport<byte[]> getWriteSupport(org.apache.hadoop.conf.Configuration conf) {
            return new JsonWriteSupport();
        }

        @Override
        protected WriteSupport<byte[]> getWriteSupport(ParquetConfiguration conf) {
            return new JsonWriteSupport();
        }
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> a = KafkaToFiles.parse(args);
        String brokers = KafkaToFiles.need(a, "brokers");
        String topic = KafkaToFiles.need(a, "topic");
        String out = KafkaToFiles.need(a, "out");
        String checkpoints = KafkaToFiles.need(a, "checkpoints");
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

        Path outPath;
        if (out.startsWith("s3://") || out.startsWith("s3a://")) {
            // flink-s3-fs-hadoop takes s3.* keys (mirrored to fs.s3a.*).
            set(conf, "s3.endpoint", KafkaToFiles.need(a, "s3-endpoint"));
            set(conf, "s3.path.style.access", "true");
            set(conf, "s3.access-key", env("AWS_ACCESS_KEY_ID"));
            set(conf, "s3.secret-key", env("AWS_SECRET_ACCESS_KEY"));
            set(conf, "s3.endpoint.region", a.getOrDefault("s3-region", "us-east-1"));
            set(conf, "s3.connection.ssl.enabled", "false");
            // S3A deletes the "directory" markers above a file it wrote; versitygw's posix
            // backend refuses to delete a non-empty directory, and S3A retries forever.
            set(conf, "s3.directory.marker.retention", "keep");
            // The recoverable writer's part size (bytes buffered locally before a part is
            // uploaded), as the connector's part_size.
            set(conf, "s3.upload.min.part.size", a.getOrDefault("part-size", "16777216"));
            outPath = new Path(out);
        } else {
            outPath = new Path(new File(out).toURI());
        }
        FileSystem.initialize(conf, null);

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

        ParquetBuilder<byte[]> builder = file -> new Builder(file)
                .withCompressionCodec(CompressionCodecName.ZSTD)
                .build();
        FileSink<byte[]> sink = FileSink.forBulkFormat(outPath, new ParquetWriterFactory<>(builder))
                .withBucketAssigner(new BasePathBucketAssigner<>())
                .withOutputFileConfig(OutputFileConfig.builder().withPartPrefix("part").withPartSuffix(".parquet").build())
                .build();

        env.fromSource(source, WatermarkStrategy.noWatermarks(), "kafka").sinkTo(sink).name("parquet");
        env.execute("kafka-to-parquet");
    }

    private static void set(Configuration conf, String key, String value) {
        ConfigOption<String> o = ConfigOptions.key(key).stringType().noDefaultValue();
        conf.set(o, value);
    }

    private static String env(String name) {
        String v = System.getenv(name);
        if (v == null || v.isEmpty()) {
            throw new IllegalArgumentException(name + " is not set (the S3 credentials)");
        }
        return v;
    }
}
