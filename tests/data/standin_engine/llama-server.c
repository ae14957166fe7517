/* The stand-in engine serves nothing: pdx's cache keeps a llama.cpp build only with a llama-server. */
#include <stdio.h>

int main(void) {
    fprintf(stderr, "error: the stand-in engine has no server\n");
    return 1;
}
