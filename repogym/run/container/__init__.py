"""Running the task's commands in containers of its environment, through the Docker
Engine: the engine, the runner, the keeper of its volumes, one command, archives."""
