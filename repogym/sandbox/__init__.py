"""Running the submission's commands on the host: the sandbox users, the processes
they leave (the reaper), signals, and the checks made before grading."""
