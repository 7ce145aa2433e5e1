/* A stateful Kafka Streams application for tests/java/test_kafka_streams.py and bench/.
 *
 *   java -cp <kafka's jars>:<classes> OrderTotals <bootstrap> <application.id> <state dir> <classic|streams> [prefix]
 *
 * Orders ("o17" -> "c3,25": customer, amount) are re-keyed by customer through a repartition topic; from
 * there an aggregation keeps each customer's total in a state store (and its changelog) and writes it to
 * "totals", a stream-table join with the "customers" table ("c3" -> region) writes "o17:region" to
 * "regions", and a windowed count writes each customer's orders per minute to "windows". Processing is
 * exactly_once_v2 with a short commit interval and no cache, so every update reaches the outputs. The run
 * prints "state RUNNING" when its tasks are assigned and restored; it ends when killed. The topics' names
 * may carry a prefix (the bench runs the topology afresh on new topics).
 */
import java.time.Duration;
import java.util.Properties;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Repartitioned;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.state.KeyValueStore;

public final class OrderTotals {
    public static void main(String[] args) {
        String bootstrap = args[0], applicationId = args[1], stateDir = args[2], protocol = args[3];
        String prefix = args.length > 4 ? args[4] : "";
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, applicationId);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "100");
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, "0");
        p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        p.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, protocol);
        // A killed instance's member leaves the classic group when its session ends; the default 45 s
        // would only slow the restart down.
        p.put(StreamsConfig.consumerPrefix("session.timeout.ms"), "10000");

        StreamsBuilder builder = new StreamsBuilder();
        KStream<String, String> byCustomer = builder.<String, String>stream(prefix + "orders")
                .map((order, v) -> KeyValue.pair(v.split(",")[0], order + "," + v.split(",")[1]))
                .repartition(Repartitioned.as("by-customer"));

        byCustomer.groupByKey()
                .aggregate(() -> 0L, (customer, v, total) -> total + Long.parseLong(v.split(",")[1]),
                        Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("totals-store")
                                .withValueSerde(Serdes.Long()))
                .toStream()
                .mapValues(total -> Long.toString(total))
                .to(prefix + "totals");

        KTable<String, String> customers = builder.table(prefix + "customers", Consumed.as("customers-source"),
                Materialized.as("customers-store"));
        byCustomer.join(customers, (v, region) -> v.split(",")[0] + ":" + region).to(prefix + "regions");

        byCustomer.groupByKey(Grouped.as("per-minute"))
                .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMinutes(1), Duration.ofHours(1)))
                .count()
                .toStream()
                .map((window, count) -> KeyValue.pair(window.key() + "@" + window.window().start(),
                        Long.toString(count)))
                .to(prefix + "windows", Produced.as("windows-sink"));

        KafkaStreams streams = new KafkaStreams(builder.build(), p);
        streams.setStateListener((now, before) -> {
            System.out.println("state " + now);
            System.out.flush();
        });
        streams.start();
    }
}
