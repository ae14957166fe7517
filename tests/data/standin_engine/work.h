/* The work one token costs the stand-in engine: each commit of the test's repository sets it. */
#define WORK_PER_TOKEN 20000
