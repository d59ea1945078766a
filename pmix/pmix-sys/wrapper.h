/* The PMIx client API rgex's bootstrap uses. */
#include <pmix.h>
