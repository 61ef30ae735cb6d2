// Puts items into a Curator DistributedDelayQueue exactly as a Java service would (Apache
// Curator 5.4.0 from Debian): item i has payload "<i> <due epoch ms>" and is due at
// BASE_MS + (i * 7919) % SPREAD_MS; every MULTI_EVERY-th put is a putMulti of 3 items with
// one due time. Waits until every put is stored, prints "put <items> in <nodes> nodes".
// usage: CuratorProduce CONNECT QUEUE_PATH ITEMS BASE_MS SPREAD_MS MULTI_EVERY
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.queue.DistributedDelayQueue;
import org.apache.curator.framework.recipes.queue.MultiItem;
import org.apache.curator.framework.recipes.queue.QueueBuilder;
import org.apache.curator.framework.recipes.queue.QueueSerializer;
import org.apache.curator.retry.ExponentialBackoffRetry;

public class CuratorProduce {
    public static void main(String[] a) throws Exception {
        String connect = a[0], qpath = a[1];
        int items = Integer.parseInt(a[2]);
        long base = Long.parseLong(a[3]), spread = Long.parseLong(a[4]);
        int multiEvery = Integer.parseInt(a[5]);
        QueueSerializer<String> ser = new QueueSerializer<String>() {
            public byte[] serialize(String item) { return item.getBytes(StandardCharsets.UTF_8); }
            public String deserialize(byte[] bytes) {
                return new String(bytes, StandardCharsets.UTF_8);
            }
        };
        CuratorFramework client = CuratorFrameworkFactory.newClient(connect,
                new ExponentialBackoffRetry(100, 5));
        client.start();
        DistributedDelayQueue<String> q =
                QueueBuilder.builder(client, null, ser, qpath).buildDelayQueue();
        q.start();
        int i = 0, nodes = 0;
        while (i < items) {
            long due = base + ((long) i * 7919) % spread;
            if (multiEvery > 0 && nodes % multiEvery == 0 && i + 3 <= items) {
                final String[] three = {i + " " + due, (i + 1) + " " + due, (i + 2) + " " + due};
                final int[] at = {0};
                q.putMulti(new MultiItem<String>() {
                    public String nextItem() { return at[0] < 3 ? three[at[0]++] : null; }
                }, due);
                i += 3;
            } else {
                q.put(i + " " + due, due);
                i++;
            }
            nodes++;
        }
        boolean flushed = q.flushPuts(30, TimeUnit.SECONDS);
        System.out.println("put " + i + " in " + nodes + " nodes");
        q.close();
        client.close();
        System.exit(flushed ? 0 : 1);
    }
}
