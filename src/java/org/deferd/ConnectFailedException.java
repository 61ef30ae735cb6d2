package org.deferd;

import java.io.IOException;
import java.net.SocketException;
import java.nio.file.AccessDeniedException;

/**
 * No connection could be made to the daemon's socket: deferd is not running there, the path
 * is not its socket, or the socket's mode keeps this user out. Nothing was sent, so any
 * request may be tried again once deferd is up.
 *
 * <p>Thread-safety: immutable once thrown.
 */
public class ConnectFailedException extends DisconnectedException {
    private static final long serialVersionUID = 1L;

    /** The path that was tried. */
    private final String socketPath;
    /** Whether the OS denied access (trying again will not help). */
    private final boolean permission;

    ConnectFailedException(String socketPath, IOException cause) {
        super("CONNECT_FAILED", "cannot connect to deferd at " + socketPath + ": " + hint(cause)
                + " (the path is the client's socket, else $DEFERD_SOCKET, else "
                + Client.DEFAULT_SOCKET + ")");
        this.socketPath = socketPath;
        this.permission = isPermission(cause);
        initCause(cause);
    }

    private static boolean isPermission(IOException e) {
        String m = String.valueOf(e.getMessage());
        return e instanceof AccessDeniedException || m.contains("Permission denied");
    }

    private static String hint(IOException e) {
        String m = String.valueOf(e.getMessage());
        if (isPermission(e)) {
            return "permission denied: the socket's socket_mode/socket_group (deferd.ini) do not"
                    + " let this user in";
        }
        if (m.contains("Connection refused")) {
            return "nothing listens on it: deferd is not running (the socket file is left from"
                    + " one that stopped)";
        }
        if (m.contains("No such file")) {
            return "no such socket: is deferd running, with this [daemon] socket in its"
                    + " deferd.ini?";
        }
        return e instanceof SocketException ? m : e.toString();
    }

    /** @return the path that was tried */
    public String socketPath() {
        return socketPath;
    }

    /** @return false for a permission error (trying again will not help), else true */
    @Override
    public boolean isRetryable() {
        return !permission;
    }
}
