"""Runners beyond one fused program: Sebulba's actor threads, A3C's workers, envs split over
devices, and jobs of several processes."""
