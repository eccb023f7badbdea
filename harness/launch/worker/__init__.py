"""What runs inside a job, whatever the backend: one run (``job``), several runs sharing a device
(``packing``), and the process group of a run spread over several processes (``distributed``)."""
