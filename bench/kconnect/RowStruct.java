package dev.connector.bench;

import java.time.Instant;
import java.util.Date;
import java.util.Map;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.ConnectRecord;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.data.Timestamp;
import org.apache.kafka.connect.errors.DataException;
import org.apache.kafka.connect.transforms.Transformation;

/**
 * A single message transform for the bench's Kafka Connect contender: it turns the
 * schemaless JSON value of bench/cmd/load's rows layout ({"id":42,"u":42,"h":42,
 * "ts":"2026-01-01T00:00:00.042Z","pad":"..."}, read by JsonConverter with
 * schemas.enable=false into a Map) into a Struct with the table's schema. JDBC sink
 * connectors need a schema (Debezium's refuses schemaless values), and Kafka ships no
 * transform that adds one: without this the topic would have to carry JsonConverter's
 * schema envelope, several times the bytes of every record.
 */
public class RowStruct<R extends ConnectRecord<R>> implements Transformation<R> {
  static final Schema SCHEMA = SchemaBuilder.struct().name("bench_rows")
      .field("id", Schema.INT64_SCHEMA)
      .field("u", Schema.INT64_SCHEMA)
      .field("h", Schema.INT64_SCHEMA)
      .field("ts", Timestamp.SCHEMA)
      .field("pad", Schema.STRING_SCHEMA)
      .build();

  @Override
  public R apply(R record) {
    if (!(record.value() instanceof Map)) {
      throw new DataException("RowStruct: want a schemaless JSON object, got " + record.value());
    }
    Map<?, ?> m = (Map<?, ?>) record.value();
    Struct s = new Struct(SCHEMA)
        .put("id", ((Number) m.get("id")).longValue())
        .put("u", ((Number) m.get("u")).longValue())
        .put("h", ((Number) m.get("h")).longValue())
        .put("ts", Date.from(Instant.parse((String) m.get("ts"))))
        .put("pad", (String) m.get("pad"));
    return record.newRecord(record.topic(), record.kafkaPartition(), record.keySchema(), record.key(),
        SCHEMA, s, record.timestamp());
  }

  @Override
  public ConfigDef config() {
    return new ConfigDef();
  }

  @Override
  public void configure(Map<String, ?> configs) {}

  @Override
  public void close() {}
}
