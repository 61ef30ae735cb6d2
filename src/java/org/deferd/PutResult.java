package org.deferd;

/**
 * A stored job: its id, and whether its key was taken ({@code duplicate}: the id is the
 * existing job's and nothing was created).
 *
 * <p>Thread-safety: immutable.
 *
 * @param id the job id
 * @param duplicate true when the key was taken
 */
public record PutResult(String id, boolean duplicate) {
}
