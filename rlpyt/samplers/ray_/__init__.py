"""Samplers whose envs are stepped by Ray actors, on one machine or a cluster.

``rlpyt.samplers.ray_.sampler.RaySampler`` serves the synchronous runners;
``rlpyt.samplers.ray_.async_sampler.AsyncRaySampler`` the asynchronous ones (its
sampler process runs ``rlpyt.samplers.ray_.stream.RayStreamSampler``, whose actors
run one slice ahead).  ``rlpyt.samplers.ray_.actor.EnvActor`` is the actor of both,
and ``rlpyt.samplers.ray_.group`` starts, watches and replaces actors.
"""
