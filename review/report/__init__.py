"""The run report: RUN/report.html and RUN/report/, a small static site of counts, plots, samples and rejects."""
