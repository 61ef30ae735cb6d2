package org.deferd;

import java.util.List;
import java.util.stream.Collectors;

/**
 * The answer to a batch ({@link Client#putBatch}), a flow ({@link Client#putFlow}: the
 * parent first) or to follow-ups ({@link Job#ackThen}, {@link Job#ackJoin},
 * {@link Job#nackThen}): one {@link PutResult} per item, in request order.
 *
 * <p>Thread-safety: immutable.
 *
 * @param results one result per item
 * @param parts how many ZooKeeper transactions a batch took
 * @param movedId for {@link Job#nackThen}, the nacked job's new id (null when it kept its id)
 */
public record BatchResult(List<PutResult> results, int parts, String movedId) {
    /**
     * Copies the results.
     *
     * @param results one result per item
     * @param parts how many ZooKeeper transactions a batch took
     * @param movedId the nacked job's new id, or null
     */
    public BatchResult {
        results = List.copyOf(results);
    }

    /** @return the job ids in request order */
    public List<String> ids() {
        return results.stream().map(PutResult::id).collect(Collectors.toList());
    }
}
