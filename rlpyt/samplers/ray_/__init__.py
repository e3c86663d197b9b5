"""Samplers whose envs are stepped by Ray actors, on one machine or a cluster.

``rlpyt.samplers.ray_.sampler.RaySampler`` serves the synchronous runners;
``rlpyt.samplers.ray_.actor.EnvActor`` is the actor (reusable by an asynchronous
variant) and ``rlpyt.samplers.ray_.group`` starts, watches and replaces actors.
"""
