"""ward's Python kit (SPEC §18, P13): a runtime of yours behind ward's lockstep protocol.

- :mod:`ward_kit.wire`: the framing and the lockstep (:func:`~ward_kit.wire.serve`), the
  virtual-time asyncio loop, the faked clocks and the seeded randomness;
- :mod:`ward_kit.agent`: ``Agent`` (the process's state) and ``Run`` (one run), the chart
  agent's parts no SDK keeps;
- :mod:`ward_kit.runtime`: the envelopes and codes (SPEC §4), ``Guard`` (R22), ``Ward`` (the
  provider, the bodies and the user, over the protocol).

``adapters/python/template.py`` puts a runtime behind ward in one file.
"""
