package dev.connector.bench;

import java.io.File;
import java.io.IOException;
import java.time.Duration;
import java.util.Map;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.typeinfo.PrimitiveArrayTypeInfo;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.api.java.typeutils.TupleTypeInfo;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.ExternalizedCheckpointRetention;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.connector.kafka.sink.KafkaRecordSerializationSchema;
import org.apache.flink.connector.kafka.sink.KafkaSink;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.connector.kafka.source.reader.deserializer.KafkaRecordDeserializationSchema;
import org.apache.flink.core.execution.CheckpointingMode;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.util.Collector;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;

/**
 * The Flink contender of bench/run's Kafka-to-Kafka experiments: a DataStream job
 * KafkaSource -> KafkaSink with {@code DeliveryGuarantee.EXACTLY_ONCE}, run in a local mini
 * cluster inside this JVM, checkpointing every --interval-ms into --checkpoints (as
 * KafkaToFiles does).
 *
 * <p>Each record's key, value and timestamp are copied as bytes (no decoding), as the
 * connector's Kafka sink does; the output partition is Kafka's default partitioner's (murmur2
 * of the key), as the connector's {@code partitioning: key}. The sink's transactions are
 * named {@code <--txn-prefix>-<subtask>-<checkpoint>} and time out after
 * --txn-timeout-ms (below the broker's transaction.max.timeout.ms, 15 min by default:
 * KafkaSink's own default, 1 h, is refused there).
 *
 * <pre>
 * java -cp 'flink-bench.jar:lib/*' dev.connector.bench.KafkaToKafka \
 *   --brokers 127.0.0.1:39092 --topic in --out-topic out --checkpoints /tmp/chk \
 *   [--parallelism 2] [--interval-ms 1000] [--group g] [--txn-prefix p] [--txn-timeout-ms 600000]
 * </pre>
 */
public final class KafkaToKafka {
    /** A record's key and value. */
    static final TypeInformation<Tuple2<byte[], byte[]>> KV = new TupleTypeInfo<>(
            PrimitiveArrayTypeInfo.BYTE_PRIMITIVE_ARRAY_TYPE_INFO, PrimitiveArrayTypeInfo.BYTE_PRIMITIVE_ARRAY_TYPE_INFO);

    /** Reads key and value as bytes. */
    static final class KeyValue implements KafkaRecordDeserializationSchema<Tuple2<byte[], byte[]>> {
        private static final long serialVersionUID = 1L;

        @Override
        public void deserialize(ConsumerRecord<byte[], byte[]> r, Collector<Tuple2<byte[], byte[]>> out) throws IOException {
            out.collect(Tuple2.of(r.key(), r.value()));
        }

        @Override
        public TypeInformation<Tuple2<byte[], byte[]>> getProducedType() {
            return KV;
        }
    }

    /** Writes key and value to one topic, with the input record's timestamp. */
    static final class ToTopic implements KafkaRecordSerializationSchema<Tuple2<byte[], byte[]>> {
        private static final long serialVersionUID = 1L;
        private final String topic;

        ToTopic(String topic) {
            this.topic = topic;
        }

        @Override
        public ProducerRecord<byte[], byte[]> serialize(Tuple2<byte[], byte[]> kv, KafkaSinkContext ctx, Long timestamp) {
            return new ProducerRecord<>(topic, null, timestamp, kv.f0, kv.f1);
        }
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> a = KafkaToFiles.parse(args);
        String brokers = KafkaToFiles.need(a, "brokers");
        String topic = KafkaToFiles.need(a, "topic");
        String outTopic = KafkaToFiles.need(a, "out-topic");
        String checkpoints = KafkaToFiles.need(a, "checkpoints");
        int parallelism = Integer.parseInt(a.getOrDefault("parallelism", "1"));
        long intervalMs = Long.parseLong(a.getOrDefault("interval-ms", "1000"));
        String group = a.getOrDefault("group", "flink-bench");
        String txnPrefix = a.getOrDefault("txn-prefix", group);
        String txnTimeoutMs = a.getOrDefault("txn-timeout-ms", "600000");

        Configuration conf = new Configuration();
        conf.set(CheckpointingOptions.CHECKPOINT_STORAGE, "filesystem");
        conf.set(CheckpointingOptions.CHECKPOINTS_DIRECTORY, new File(checkpoints).toURI().toString());
        conf.set(CheckpointingOptions.EXTERNALIZED_CHECKPOINT_RETENTION,
                ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION);
        conf.set(CheckpointingOptions.MAX_RETAINED_CHECKPOINTS, 3);
        conf.set(CheckpointingOptions.MAX_CONCURRENT_CHECKPOINTS, 1);
        conf.set(CheckpointingOptions.CHECKPOINTING_TIMEOUT, Duration.ofSeconds(60));

        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
        env.setParallelism(parallelism);
        env.enableCheckpointing(intervalMs, CheckpointingMode.EXACTLY_ONCE);

        KafkaSource<Tuple2<byte[], byte[]>> source = KafkaSource.<Tuple2<byte[], byte[]>>builder()
                .setBootstrapServers(brokers)
                .setTopics(topic)
                .setGroupId(group)
                .setStartingOffsets(OffsetsInitializer.earliest())
                .setDeserializer(new KeyValue())
                .setProperty("isolation.level", "read_committed")
                .build();

        KafkaSink<Tuple2<byte[], byte[]>> sink = KafkaSink.<Tuple2<byte[], byte[]>>builder()
                .setBootstrapServers(brokers)
                .setRecordSerializer(new ToTopic(outTopic))
                .setDeliveryGuarantee(DeliveryGuarantee.EXACTLY_ONCE)
                .setTransactionalIdPrefix(txnPrefix)
                .setProperty("transaction.timeout.ms", txnTimeoutMs)
                .build();

        env.fromSource(source, WatermarkStrategy.noWatermarks(), "kafka")
                .sinkTo(sink)
                .name("kafka-out");
        env.execute("kafka-to-kafka");
    }
}
