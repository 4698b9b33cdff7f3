"""The code behind scripts/evidence.py, a module per figure family: common
(the records and what every table shares), run_records, policies,
validation, baselines, python_api, comm, micro, scale, faults, soak, fuzz,
sanitizers, p4, durations, and tables and plots, which make the docs' tables
and images from them."""
