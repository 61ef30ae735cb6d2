package org.deferd;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ReadableByteChannel;
import java.nio.charset.StandardCharsets;

/**
 * Cuts what the daemon sends into messages: a reply or a one-line push (a line), or a
 * {@code JOB} push (its header line, then its payload and a newline). Payloads are binary;
 * lines are UTF-8.
 *
 * <p>Thread-safety: not thread-safe; the client's reader thread owns it.
 */
final class MessageReader {
    /** One message: {@code header} and {@code payload} are set for a {@code JOB} push. */
    record Message(String line, Wire.JobHeader header, byte[] payload) {
    }

    private byte[] buf = new byte[1 << 16];
    private int start;
    private int end;
    private int scanned; // no newline in [start, scanned)

    /**
     * Reads what the channel has (blocking until something comes).
     *
     * @return the bytes read, or -1 at end of file
     */
    int readFrom(ReadableByteChannel ch) throws IOException {
        if (end == buf.length) {
            makeRoom(buf.length - start + 1);
        }
        return readInto(ch);
    }

    private int readInto(ReadableByteChannel ch) throws IOException {
        int n = ch.read(ByteBuffer.wrap(buf, end, buf.length - end));
        if (n > 0) {
            end += n;
        }
        return n;
    }

    /** Room for {@code need} bytes from {@code start}: move them to the front, or grow. */
    private void makeRoom(int need) {
        int have = end - start;
        if (need > buf.length) {
            byte[] bigger = new byte[Math.max(need, buf.length * 2)];
            System.arraycopy(buf, start, bigger, 0, have);
            buf = bigger;
        } else {
            System.arraycopy(buf, start, buf, 0, have);
        }
        scanned -= start;
        start = 0;
        end = have;
    }

    /** @return the next complete message, or null until more is read */
    Message next() {
        int nl = -1;
        for (int i = Math.max(scanned, start); i < end; i++) {
            if (buf[i] == '\n') {
                nl = i;
                break;
            }
        }
        if (nl < 0) {
            scanned = end;
            return null;
        }
        int lineEnd = nl > start && buf[nl - 1] == '\r' ? nl - 1 : nl;
        String line = new String(buf, start, lineEnd - start, StandardCharsets.UTF_8);
        if (!line.startsWith("JOB ")) {
            start = nl + 1;
            scanned = start;
            return new Message(line, null, null);
        }
        Wire.JobHeader header = Wire.jobHeader(line);
        long total = (long) nl + 1 + header.length() + 1 - start;
        if (end - start < total) {
            scanned = nl; // the newline found stays the header's
            if (total > buf.length) {
                makeRoom((int) total);
            }
            return null;
        }
        int from = nl + 1;
        if (buf[from + header.length()] != '\n') {
            throw new ProtocolException("JOB payload not followed by a newline: " + line);
        }
        byte[] payload = new byte[header.length()];
        System.arraycopy(buf, from, payload, 0, payload.length);
        start = from + payload.length + 1;
        scanned = start;
        return new Message(line, header, payload);
    }
}
