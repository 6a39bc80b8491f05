"Packaging for ragnb: everything comes from settings.ini (nbdev 2), with no pkg_resources."
from configparser import ConfigParser
from pathlib import Path
import setuptools

cfg = ConfigParser(delimiters=['='])
cfg.read(Path(__file__).parent / 'settings.ini', encoding='utf-8')
cfg = cfg['DEFAULT']
reqs = lambda key: cfg.get(key, '').split()

lic = {'apache2': 'License :: OSI Approved :: Apache Software License'}
setuptools.setup(
    name=cfg['lib_name'], version=cfg['version'], description=cfg['description'],
    long_description=(Path(__file__).parent / 'README.md').read_text(encoding='utf-8'),
    long_description_content_type='text/markdown',
    author=cfg['author'], author_email=cfg['author_email'], license=cfg['license'],
    url=cfg['git_url'], keywords=cfg['keywords'],
    classifiers=['Development Status :: 3 - Alpha', 'Intended Audience :: Developers', lic[cfg['license']],
                 'Programming Language :: Python :: 3', 'Natural Language :: Spanish', 'Natural Language :: English'],
    python_requires='>=' + cfg['min_python'],
    packages=setuptools.find_packages(include=['ragnb', 'ragnb.*']),
    include_package_data=True,
    install_requires=reqs('requirements'),
    extras_require={k.removesuffix('_requirements').replace('_', '-'): reqs(k) for k in cfg
                    if k.endswith('_requirements') and k != 'requirements'},
    entry_points={'console_scripts': cfg['console_scripts'].split(), 'nbdev': [f"{cfg['lib_path']}={cfg['lib_path']}._modidx:d"]},
    zip_safe=False,
)
