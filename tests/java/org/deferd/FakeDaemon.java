package org.deferd;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.Channels;
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
 * line (several lines at once are fine; null closes the connection). Requests are kept.
 */
final class FakeDaemon implements AutoCloseable {
    final List<String> requests = new CopyOnWriteArrayList<>();
    private final Path dir;
    private final ServerSocketChannel server;
    private final Thread thread;
    private volatile OutputStream out;

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
        out.write(text.getBytes(StandardCharsets.UTF_8));
        out.flush();
    }

    private void serve(Function<String, String> script) {
        try (SocketChannel ch = server.accept()) {
            InputStream in = Channels.newInputStream(ch);
            out = Channels.newOutputStream(ch);
            for (String line; (line = readLine(in)) != null; ) {
                String[] w = line.split(" ");
                if (w[0].equals("PUT")) {
                    in.readNBytes(Integer.parseInt(w[2]) + 1);
                }
                requests.add(line);
                String reply = script.apply(line);
                if (reply == null) {
                    return;
                }
                push(reply);
            }
        } catch (IOException e) {
            // the client went away: the test says what it expected
        }
    }

    private static String readLine(InputStream in) throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        for (int c; (c = in.read()) != '\n'; ) {
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
