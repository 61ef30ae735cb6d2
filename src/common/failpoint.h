/* Test-only failpoints: a test names one place in the environment (DEFERD_FAILPOINT) and
 * the code there does something drastic, e.g. kills the process, so that a crash at an
 * exact point can be tested deterministically. Not configuration: never set in
 * production (docs/deferd.md, ENVIRONMENT). */
#ifndef DEFERD_FAILPOINT_H
#define DEFERD_FAILPOINT_H

/* 1 when the failpoint NAME is armed and this hit is the one it fires on, else 0.
 * DEFERD_FAILPOINT (read once, at the first call) is "NAME", firing on every hit, or
 * "NAME:N", firing only on the Nth hit of NAME (N from 1). Loop thread only. */
int failpoint_hit(const char *name);

#endif
