package org.deferd;

/**
 * How the children of a flow's parent ended ({@link Client#putFlow} with {@code on =
 * "complete"}): the released parent's id carries it, so every delivery of the parent says it.
 *
 * <p>Thread-safety: immutable.
 *
 * @param acked children acked
 * @param dead children dead-lettered
 */
public record FlowResults(long acked, long dead) {
}
