// Consumes a Curator DistributedDelayQueue or DistributedPriorityQueue with lockPath, exactly
// as a Java service would (Apache Curator 5.4.0 from Debian), and prints one line per item:
// "<epoch ms when received> <payload>". Stops after COUNT items or TIMEOUT_S seconds; with
// STOP_FILE, runs until that file exists (then closes the queue, which lets the item in hand
// finish) and exits 0. WORK_MS: time spent on each item, to share a queue with others.
// usage: CuratorConsume CONNECT delay|priority QUEUE_PATH LOCK_PATH COUNT TIMEOUT_S
//                       [WORK_MS STOP_FILE]
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.queue.QueueBuilder;
import org.apache.curator.framework.recipes.queue.QueueConsumer;
import org.apache.curator.framework.recipes.queue.QueueSerializer;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;

public class CuratorConsume {
    public static void main(String[] a) throws Exception {
        String connect = a[0], mode = a[1], qpath = a[2], lpath = a[3];
        int count = Integer.parseInt(a[4]);
        long timeoutS = Long.parseLong(a[5]);
        long workMs = a.length > 6 ? Long.parseLong(a[6]) : 0;
        java.io.File stop = a.length > 7 ? new java.io.File(a[7]) : null;
        CountDownLatch left = new CountDownLatch(count);
        QueueSerializer<byte[]> ser = new QueueSerializer<byte[]>() {
            public byte[] serialize(byte[] item) { return item; }
            public byte[] deserialize(byte[] bytes) { return bytes; }
        };
        QueueConsumer<byte[]> consumer = new QueueConsumer<byte[]>() {
            public void consumeMessage(byte[] item) throws Exception {
                if (workMs > 0)
                    Thread.sleep(workMs);
                synchronized (System.out) {
                    System.out.println(System.currentTimeMillis() + " "
                                       + new String(item, StandardCharsets.UTF_8));
                    System.out.flush();
                }
                left.countDown();
            }
            public void stateChanged(CuratorFramework c, ConnectionState s) {}
        };
        CuratorFramework client = CuratorFrameworkFactory.newClient(connect,
                new ExponentialBackoffRetry(100, 5));
        client.start();
        QueueBuilder<byte[]> b = QueueBuilder.builder(client, consumer, ser, qpath).lockPath(lpath);
        java.io.Closeable q;
        if (mode.equals("delay")) {
            q = b.buildDelayQueue();
            ((org.apache.curator.framework.recipes.queue.DistributedDelayQueue<byte[]>) q).start();
        } else {
            q = b.buildPriorityQueue(0);
            ((org.apache.curator.framework.recipes.queue.DistributedPriorityQueue<byte[]>) q).start();
        }
        boolean all;
        if (stop != null) {
            long end = System.currentTimeMillis() + timeoutS * 1000;
            while (!stop.exists() && System.currentTimeMillis() < end)
                Thread.sleep(20);
            all = stop.exists();
        } else {
            all = left.await(timeoutS, TimeUnit.SECONDS);
        }
        q.close();
        client.close();
        System.exit(all ? 0 : 1);
    }
}
