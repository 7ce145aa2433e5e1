import subprocess


def test_kcat_round_trip(broker):
    produce = subprocess.run(
        ["kcat", "-b", broker.bootstrap, "-P", "-t", "smoke", "-K:"],
        input=b"k1:hello\nk2:world\n",
        capture_output=True,
        timeout=30,
    )
    assert produce.returncode == 0, produce.stderr
    consume = subprocess.run(
        ["kcat", "-b", broker.bootstrap, "-C", "-t", "smoke", "-e", "-f", "%k=%s\n"],
        capture_output=True,
        timeout=30,
    )
    assert consume.returncode == 0, consume.stderr
    assert consume.stdout.decode().splitlines() == ["k1=hello", "k2=world"]
