// Kafka 3.9 client side of kafka.sh: talks to the broker (ZooKeeper mode, its registry Kerberized)
// with kafka-clients from the same Maven jars, and prints one line per observation.
//
//   KafkaCheck <bootstrap host:port>
//
// Creates topic t1 (3 partitions, replication 1) with the AdminClient, describes it, produces 100
// records (value v<i> to partition i % 3, acks=all), reads them back with a consumer that assigns
// itself the partitions (no group: no __consumer_offsets topic), and lists the topics. Per
// partition the order is fixed, so counts and first/last values per partition are deterministic.
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListTopicsOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class KafkaCheck {
    static void out(String s) { System.out.println(s); System.out.flush(); }

    static String cause(Throwable e) {
        while (e.getCause() != null && e.getCause() != e) e = e.getCause();
        return e.getClass().getSimpleName();
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = "t1";
        int partitions = 3, records = 100;
        Properties ap = new Properties();
        ap.put("bootstrap.servers", bootstrap);
        ap.put("request.timeout.ms", "20000");
        ap.put("default.api.timeout.ms", "30000");
        try (Admin admin = Admin.create(ap)) {
            try {
                admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get(30, TimeUnit.SECONDS);
                out("admin: createTopics " + topic + " partitions=" + partitions + " replication=1 -> ok");
            } catch (Exception e) {
                out("admin: createTopics " + topic + " -> " + cause(e));
            }
            // leaders are elected by the controller after the topic znode is written: wait for all
            for (int i = 0; i < 100; i++) {
                try {
                    TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames().get(10, TimeUnit.SECONDS).get(topic);
                    boolean ready = d.partitions().size() == partitions;
                    for (TopicPartitionInfo p : d.partitions()) ready &= p.leader() != null && p.leader().id() >= 0;
                    if (ready || i == 99) {
                        List<String> ps = new ArrayList<>();
                        for (TopicPartitionInfo p : d.partitions())
                            ps.add(p.partition() + ":leader=" + (p.leader() == null ? "none" : p.leader().id()) + ",isr=" + p.isr().size());
                        out("admin: describeTopics " + topic + " -> internal=" + d.isInternal() + " [" + String.join(" ", ps) + "]");
                        break;
                    }
                } catch (Exception e) {
                    if (i == 99) out("admin: describeTopics " + topic + " -> " + cause(e));
                }
                Thread.sleep(200);
            }
            Properties pp = new Properties();
            pp.put("bootstrap.servers", bootstrap);
            pp.put("acks", "all");
            pp.put("linger.ms", "5");
            pp.put("delivery.timeout.ms", "60000");
            pp.put("key.serializer", StringSerializer.class.getName());
            pp.put("value.serializer", StringSerializer.class.getName());
            int acked = 0;
            String perr = null;
            try (KafkaProducer<String, String> prod = new KafkaProducer<>(pp)) {
                List<java.util.concurrent.Future<org.apache.kafka.clients.producer.RecordMetadata>> fs = new ArrayList<>();
                for (int i = 0; i < records; i++)
                    fs.add(prod.send(new ProducerRecord<>(topic, i % partitions, "k" + i, "v" + i)));
                prod.flush();
                for (var f : fs) {
                    try { f.get(60, TimeUnit.SECONDS); acked++; } catch (Exception e) { if (perr == null) perr = cause(e); }
                }
            }
            out("producer: sent " + records + ", acked " + acked + (perr == null ? "" : ", first error " + perr));
            Properties cp = new Properties();
            cp.put("bootstrap.servers", bootstrap);
            cp.put("enable.auto.commit", "false");
            cp.put("auto.offset.reset", "earliest");
            cp.put("key.deserializer", StringDeserializer.class.getName());
            cp.put("value.deserializer", StringDeserializer.class.getName());
            Map<Integer, List<String>> got = new TreeMap<>();
            int total = 0;
            try (KafkaConsumer<String, String> cons = new KafkaConsumer<>(cp)) {
                List<TopicPartition> tps = new ArrayList<>();
                for (int p = 0; p < partitions; p++) tps.add(new TopicPartition(topic, p));
                cons.assign(tps);
                cons.seekToBeginning(tps);
                long end = System.currentTimeMillis() + 30000;
                while (total < acked && System.currentTimeMillis() < end) {
                    for (ConsumerRecord<String, String> r : cons.poll(Duration.ofMillis(500))) {
                        got.computeIfAbsent(r.partition(), k -> new ArrayList<>()).add(r.value());
                        total++;
                    }
                }
            }
            out("consumer: read " + total + " records");
            for (Map.Entry<Integer, List<String>> e : got.entrySet()) {
                List<String> v = e.getValue();
                out("consumer: partition " + e.getKey() + ": " + v.size() + " records, first " + v.get(0) + ", last " + v.get(v.size() - 1));
            }
            try {
                out("admin: listTopics -> " + new TreeSet<>(admin.listTopics().names().get(30, TimeUnit.SECONDS)));
                out("admin: listTopics (internal too) -> "
                    + new TreeSet<>(admin.listTopics(new ListTopicsOptions().listInternal(true)).names().get(30, TimeUnit.SECONDS)));
            } catch (Exception e) {
                out("admin: listTopics -> " + cause(e));
            }
        }
        out("done");
    }
}
