"""Parts every agent family shares: optimizers and schedules by name, the replay buffer a
config asks for, parameter noise, action boxes and Ape-X's actors."""
