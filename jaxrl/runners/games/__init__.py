"""Runners of games of several players: self-play, independent agents, evaluation matches
and opponent pools."""
