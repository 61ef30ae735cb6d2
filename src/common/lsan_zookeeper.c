/* LeakSanitizer's rule for every program that closes a ZooKeeper handle (deferd, deferctl,
 * the integration tests): the C client leaks its own records of what it had queued when
 * zookeeper_close runs, a session event its completion thread did not take in time, or the
 * calls a handle not connected still held (ZOOKEEPER-2894). Those records are the
 * library's alone: deferd's completions are its own allocations and still show. */
#ifdef __SANITIZE_ADDRESS__
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:libzookeeper_mt.so\n";
}
#else
/* ISO C wants a translation unit to declare something. */
typedef int lsan_zookeeper_unused;
#endif
