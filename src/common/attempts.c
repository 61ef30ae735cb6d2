#include "attempts.h"

uint32_t attempts_from_cversion(uint32_t prior_attempts, int32_t cversion)
{
    return prior_attempts + (uint32_t)((cversion + 2) / 4);
}

uint32_t attempts_from_owner_seq(uint32_t prior_attempts, uint32_t seq)
{
    return prior_attempts + (uint32_t)((seq + 1) / 2);
}

uint32_t attempts_given_back(uint32_t attempt)
{
    return attempt ? attempt - 1 : 0;
}

uint32_t attempts_to_replay(uint32_t prior_attempts, uint32_t attempt)
{
    uint32_t spent = attempts_given_back(attempt);
    return spent > prior_attempts ? spent - prior_attempts : 0;
}
