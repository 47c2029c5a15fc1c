"""The benchmarks: what `make bench` and docs/benchmark.md measure.

    program  `make bench` (`python -m tools.bench`): the program under mocks next to its floor and
             the whole `make plan`, on generated labs of 4, 64 and 512 workers
    floor    the floor the program is compared with: the same registrations, no project logic
    lab      the generated labs both measure: the lab stack scaled to N workers
    preview  the real `pulumi preview` of a generated sim stack against vcsim, timed
    up       the real `pulumi up` of the sim stack against lab-vcsim, next to its critical path
"""
