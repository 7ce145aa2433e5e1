/* Kafka's Java clients against a broker, one scenario per run, for tests/java/test_java_clients.py.
 *
 *   java -cp <kafka's jars>:<classes> Scenarios <scenario> <bootstrap> <args...>
 *
 * Each scenario prints one JSON object on stdout: what the client saw, for the test to check against the
 * broker (through another client) and against what it sent. Errors end the run with a stack trace and
 * exit status 1.
 */
import com.fasterxml.jackson.databind.ObjectMapper;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public final class Scenarios {
    private static final Duration WAIT = Duration.ofSeconds(60);

    public static void main(String[] args) throws Exception {
        String scenario = args[0], bootstrap = args[1];
        Map<String, Object> out;
        switch (scenario) {
            case "produce": out = produce(bootstrap, args[2], Integer.parseInt(args[3])); break;
            case "transactions": out = transactions(bootstrap, args[2], args[3]); break;
            case "consume": out = consume(bootstrap, args[2], args[3], args[4], args[5], Integer.parseInt(args[6])); break;
            case "share-consume": out = shareConsume(bootstrap, args[2], args[3], Integer.parseInt(args[4])); break;
            case "admin": out = admin(bootstrap, args[2]); break;
            default: throw new IllegalArgumentException("no scenario " + scenario);
        }
        System.out.println(new ObjectMapper().writeValueAsString(out));
    }

    private static Properties common(String bootstrap) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        return p;
    }

    private static KafkaProducer<String, String> producer(String bootstrap, String transactionalId) {
        Properties p = common(bootstrap);
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        if (transactionalId != null) p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
        return new KafkaProducer<>(p, new StringSerializer(), new StringSerializer());
    }

    /* An idempotent producer: n keyed records; each one's partition and offset as the broker acknowledged it. */
    private static Map<String, Object> produce(String bootstrap, String topic, int n) throws Exception {
        List<List<Object>> acked = new ArrayList<>();
        try (KafkaProducer<String, String> producer = producer(bootstrap, null)) {
            List<java.util.concurrent.Future<RecordMetadata>> sent = new ArrayList<>();
            for (int i = 0; i < n; i++) sent.add(producer.send(new ProducerRecord<>(topic, "k" + (i % 17), "v" + i)));
            for (int i = 0; i < n; i++) {
                RecordMetadata m = sent.get(i).get();
                acked.add(List.of("v" + i, m.partition(), m.offset()));
            }
        }
        return Map.of("acked", acked);
    }

    /* A transactional producer: one transaction committed (c0..c9), one aborted (a0..a4), one committed (d0..d2). */
    private static Map<String, Object> transactions(String bootstrap, String topic, String id) throws Exception {
        try (KafkaProducer<String, String> producer = producer(bootstrap, id)) {
            producer.initTransactions();
            producer.beginTransaction();
            for (int i = 0; i < 10; i++) producer.send(new ProducerRecord<>(topic, 0, null, "c" + i));
            producer.commitTransaction();
            producer.beginTransaction();
            for (int i = 0; i < 5; i++) producer.send(new ProducerRecord<>(topic, 0, null, "a" + i));
            producer.flush();
            producer.abortTransaction();
            producer.beginTransaction();
            for (int i = 0; i < 3; i++) producer.send(new ProducerRecord<>(topic, 0, null, "d" + i));
            producer.commitTransaction();
        }
        return Map.of("done", true);
    }

    /* A group member (group.protocol classic or consumer) reading `expected` records, then committing them. */
    private static Map<String, Object> consume(String bootstrap, String topic, String group, String protocol,
                                               String isolation, int expected) {
        Properties p = common(bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        List<String> values = new ArrayList<>();
        Map<Integer, Long> committed = new TreeMap<>();
        try (KafkaConsumer<String, String> consumer =
                 new KafkaConsumer<>(p, new StringDeserializer(), new StringDeserializer())) {
            consumer.subscribe(List.of(topic));
            long deadline = System.nanoTime() + WAIT.toNanos();
            while (values.size() < expected && System.nanoTime() < deadline) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) values.add(r.value());
            }
            consumer.commitSync();
            Collection<TopicPartition> assigned = consumer.assignment();
            for (Map.Entry<TopicPartition, OffsetAndMetadata> e : consumer.committed(new java.util.HashSet<>(assigned)).entrySet()) {
                if (e.getValue() != null) committed.put(e.getKey().partition(), e.getValue().offset());
            }
        }
        Map<String, Object> out = new HashMap<>();
        out.put("values", values);
        out.put("committed", committed);
        return out;
    }

    /* A share group member (KIP-932) reading `expected` records, each acknowledged as it is read. */
    private static Map<String, Object> shareConsume(String bootstrap, String topic, String group, int expected)
        throws Exception {
        try (Admin admin = Admin.create(common(bootstrap))) {
            ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, group);
            AlterConfigOp earliest = new AlterConfigOp(new ConfigEntry("share.auto.offset.reset", "earliest"),
                                                       AlterConfigOp.OpType.SET);
            admin.incrementalAlterConfigs(Map.of(resource, List.of(earliest))).all().get();
        }
        Properties p = common(bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        List<String> values = new ArrayList<>();
        try (KafkaShareConsumer<String, String> consumer =
                 new KafkaShareConsumer<>(p, new StringDeserializer(), new StringDeserializer())) {
            consumer.subscribe(List.of(topic));
            long deadline = System.nanoTime() + WAIT.toNanos();
            while (values.size() < expected && System.nanoTime() < deadline) {
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(200));
                for (ConsumerRecord<String, String> r : records) values.add(r.value());
            }
            consumer.commitSync();
        }
        return Map.of("values", values);
    }

    /* The admin client on the admin APIs a user reaches for first, each answer as the client parsed it. */
    private static Map<String, Object> admin(String bootstrap, String topic) throws Exception {
        Map<String, Object> out = new HashMap<>();
        try (Admin admin = Admin.create(common(bootstrap))) {
            out.put("cluster_nodes", admin.describeCluster().nodes().get().size());
            NewTopic created = new NewTopic(topic, 2, (short) 1).configs(Map.of("retention.ms", "3600000"));
            admin.createTopics(List.of(created)).all().get();
            out.put("listed", admin.listTopics().names().get().contains(topic));
            TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
            out.put("partitions", d.partitions().size());
            admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(4))).all().get();
            out.put("partitions_after", admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic)
                                             .partitions().size());
            ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
            AlterConfigOp set = new AlterConfigOp(new ConfigEntry("max.message.bytes", "2000000"), AlterConfigOp.OpType.SET);
            admin.incrementalAlterConfigs(Map.of(resource, List.of(set))).all().get();
            Map<String, String> configs = new TreeMap<>();
            for (ConfigEntry e : admin.describeConfigs(List.of(resource)).all().get().get(resource).entries()) {
                if (e.source() == ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG) configs.put(e.name(), e.value());
            }
            out.put("topic_configs", configs);
            try (KafkaProducer<String, String> producer = producer(bootstrap, null)) {
                List<java.util.concurrent.Future<RecordMetadata>> sent = new ArrayList<>();
                for (int i = 0; i < 10; i++) sent.add(producer.send(new ProducerRecord<>(topic, 0, null, "r" + i)));
                for (java.util.concurrent.Future<RecordMetadata> f : sent) f.get();
            }
            TopicPartition tp = new TopicPartition(topic, 0);
            admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(4))).all().get();
            ListOffsetsResult earliest = admin.listOffsets(Map.of(tp, OffsetSpec.earliest()));
            ListOffsetsResult latest = admin.listOffsets(Map.of(tp, OffsetSpec.latest()));
            out.put("earliest", earliest.partitionResult(tp).get().offset());
            out.put("latest", latest.partitionResult(tp).get().offset());
            admin.alterConsumerGroupOffsets(topic + "-g", Map.of(tp, new OffsetAndMetadata(7, "meta"))).all().get();
            OffsetAndMetadata got = admin.listConsumerGroupOffsets(topic + "-g").partitionsToOffsetAndMetadata().get().get(tp);
            out.put("group_offset", List.of(got.offset(), got.metadata()));
            List<String> groups = new ArrayList<>();
            for (GroupListing g : admin.listGroups().all().get()) groups.add(g.groupId());
            out.put("groups", groups);
            admin.deleteTopics(List.of(topic)).all().get();
            out.put("listed_after_delete", admin.listTopics().names().get().contains(topic));
        }
        return out;
    }
}
