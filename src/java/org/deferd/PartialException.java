package org.deferd;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * {@code PARTIAL}: a batch split into parts failed after its first parts were stored
 * ({@code ERR PARTIAL stored=<k> ids=<ids> dup=<positions>; the rest was not stored: ...}).
 * The rest was not stored (or may have been: see the text); {@link #storedIds()} names what was.
 *
 * <p>Thread-safety: immutable once thrown.
 */
public class PartialException extends DeferdException {
    private static final long serialVersionUID = 1L;

    /** The ids of the jobs stored. */
    private final List<String> storedIds = new ArrayList<>();
    /** Positions among them that were duplicates. */
    private final List<Integer> duplicates = new ArrayList<>();

    /**
     * @param text the daemon's text after the code
     */
    public PartialException(String text) {
        super("PARTIAL", text);
        // ids= holds '/', so it is read from the text, before its ';'
        for (String word : text.split(";", 2)[0].split(" ")) {
            if (word.startsWith("ids=")) {
                for (String id : word.substring(4).split(",")) {
                    if (!id.isEmpty() && !id.equals("-")) {
                        storedIds.add(id);
                    }
                }
            } else if (word.startsWith("dup=")) {
                for (String p : word.substring(4).split(",")) {
                    if (!p.isEmpty() && p.chars().allMatch(Character::isDigit)) {
                        duplicates.add(Integer.parseInt(p) - 1);
                    }
                }
            }
        }
    }

    /** @return the ids of the jobs that were stored, in request order */
    public List<String> storedIds() {
        return Collections.unmodifiableList(storedIds);
    }

    /** @return the positions (from 0) among {@link #storedIds()} that were duplicates */
    public List<Integer> duplicates() {
        return Collections.unmodifiableList(duplicates);
    }

    /** @return true: the rest of the batch may be sent again */
    @Override
    public boolean isRetryable() {
        return true;
    }
}
