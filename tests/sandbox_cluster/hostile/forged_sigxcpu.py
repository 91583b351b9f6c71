# Claim the CPU limit without reaching it: a program that cannot answer dies of SIGXCPU, the
# signal of an exhausted RLIMIT_CPU, hoping for a timeout (tolerated on optimization tests)
# instead of a wrong answer. Input "kill": os.kill; "raise": signal.raise_signal; "rlimit":
# lower its own soft RLIMIT_CPU to 1 s and burn it, so the kernel itself sends the signal,
# still far below the limit the harness set.
import os
import resource
import signal
import time

mode = input().strip()
if mode == "kill":
    os.kill(os.getpid(), signal.SIGXCPU)
elif mode == "raise":
    signal.raise_signal(signal.SIGXCPU)
elif mode == "rlimit":
    resource.setrlimit(resource.RLIMIT_CPU, (1, resource.getrlimit(resource.RLIMIT_CPU)[1]))
    while True:
        time.process_time()
print("survived")
