package org.deferd;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Function;

/**
 * A scripted daemon on a Unix socket of its own, for WireTest: it reads requests (a PUT's
 * payload with its line) and answers each with what {@code script} returns for its header
 * line (several lines at once are fine; null closes the connection, and so does an answer
 * ending in {@link #CLOSE}, once sent). Requests are kept. It takes one connection at a
 * time, and the next one once that ended.
 */
final class FakeDaemon implements AutoCloseable {
    static final String CLOSE = "<close>";

    final List<String> requests = new CopyOnWriteArrayList<>();
    private final Path dir;
    private final ServerSocketChannel server;
    private final Thread thread;
    private volatile SocketChannel conn;
    private final ByteBuffer in = ByteBuffer.allocate(1 << 16).flip();

    FakeDaemon(Function<String, String> script) throws IOException {
        dir = Files.createTempDirectory("deferd-java-fake");
        server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        server.bind(UnixDomainSocketAddress.of(dir.resolve("s.sock")));
        thread = new Thread(() -> serve(script), "fake-daemon");
        thread.setDaemon(true);
        thread.start();
    }

    String socket() {
        return dir.resolve("s.sock").toString();
    }

    /** Sends {@code text} now, between replies (a push). */
    void push(String text) throws IOException {
        // the channel itself, not Channels' streams: those lock out writes while a read waits
        ByteBuffer b = ByteBuffer.wrap(text.getBytes(StandardCharsets.UTF_8));
        while (b.hasRemaining()) {
            conn.write(b);
        }
    }

    private void serve(Function<String, String> script) {
        while (server.isOpen()) {
            try (SocketChannel ch = server.accept()) {
                converse(ch, script);
            } catch (IOException e) {
                // closed: the test is over
            }
        }
    }

    private void converse(SocketChannel ch, Function<String, String> script) {
        try {
            conn = ch;
            in.clear().flip();
            for (String line; (line = readLine(ch)) != null; ) {
                String[] w = line.split(" ");
                if (w[0].equals("PUT")) {
                    for (int i = Integer.parseInt(w[2]) + 1; i > 0; i--) {
                        readByte(ch);
                    }
                }
                requests.add(line);
                String reply = script.apply(line);
                if (reply == null) {
                    return;
                }
                push(reply.replace(CLOSE, ""));
                if (reply.endsWith(CLOSE)) {
                    return;
                }
            }
        } catch (IOException e) {
            // the client went away: the test says what it expected
        }
    }

    private int readByte(SocketChannel ch) throws IOException {
        if (!in.hasRemaining()) {
            in.clear();
            int n = ch.read(in);
            in.flip();
            if (n < 0) {
                return -1;
            }
        }
        return in.get() & 0xff;
    }

    private String readLine(SocketChannel ch) throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        for (int c; (c = readByte(ch)) != '\n'; ) {
            if (c < 0) {
                return null;
            }
            b.write(c);
        }
        return b.toString(StandardCharsets.UTF_8);
    }

    @Override
    public void close() throws IOException {
        server.close();
        Files.deleteIfExists(dir.resolve("s.sock"));
        Files.deleteIfExists(dir);
    }
}
