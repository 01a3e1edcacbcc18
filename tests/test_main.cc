// The doctest main, in its own translation unit so test files rebuild fast.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
