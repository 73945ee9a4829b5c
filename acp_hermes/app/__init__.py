"""The application shell: the command line (serve, setup, doctor, demo) and logging."""
