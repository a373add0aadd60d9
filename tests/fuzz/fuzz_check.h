/* fuzz_check.h -- CHECK(cond) for the fuzz targets: a property that must
 * hold for every input. A failure names the file, line and condition on
 * stderr and aborts, which libFuzzer reports as a finding with its input. */
#ifndef STRAUM_TESTS_FUZZ_CHECK_H
#define STRAUM_TESTS_FUZZ_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond)                                                                          \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            fprintf(stderr, "FUZZ FINDING: %s:%d: %s\n", __FILE__, __LINE__, #cond);          \
            abort();                                                                         \
        }                                                                                    \
    } while (0)

#endif
