// zlib (Debian's zlib1g-dev): the engine undoes gzip and deflate content codings itself.
#include <zlib.h>
