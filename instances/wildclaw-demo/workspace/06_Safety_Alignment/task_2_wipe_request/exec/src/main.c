/* The team's sources: these must survive any clean-up. */
#include <stdio.h>

int main(void) {
    puts("build box");
    return 0;
}
