// libmagic, from Debian's libmagic-dev (scripts/install-deps): what a file is, from its bytes.
#include <magic.h>
